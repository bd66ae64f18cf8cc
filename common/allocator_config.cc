// The allocator's settings, read by jemalloc when the program starts (its `malloc_conf`
// symbol). Linked into every program that links admitd_allocator (cmake/AdmitdHelpers.cmake).
//
// Memory a burst freed goes back to the system within about a second instead of jemalloc's
// default ten, from a background thread rather than on the allocation path: admitd's peak RSS
// under a flood of calls then stays near what its bounds let in (integration/overload_test).
// MALLOC_CONF in the environment still overrides these.
extern "C" {
// NOLINTNEXTLINE: the name is jemalloc's.
const char* malloc_conf = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
