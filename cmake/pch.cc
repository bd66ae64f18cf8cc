// The translation unit that builds a precompiled header (admitd_test_pch in
// cmake/AdmitdHelpers.cmake); it has no code of its own.
