// admitctl's commands, one function each (clients/admitctl.cc parses the command line, connects
// and calls the one named), and what they share: the command's trace, the retrying unary call,
// and the ways a command reports a usage error or a failed call. Each returns the process's exit
// status: 0 done, 1 a call failed, 2 a usage error.
//
//   return Apply(client, args);
//
// Thread safety: one command runs at a time, on the main thread.
#ifndef ADMITD_CLIENTS_ADMITCTL_COMMANDS_H_
#define ADMITD_CLIENTS_ADMITCTL_COMMANDS_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "clients/admitctl_flags.h"
#include "clients/client.h"
#include "common/trace/trace_context.h"
#include "google/protobuf/message.h"

namespace admitd::clients {

// The trace this command's calls belong to (a traceparent sent with each); unset: none.
std::optional<tracing::SpanContext>& CommandTrace();
// Sends the command's traceparent with a call, when it has one.
void AddTrace(grpc::ClientContext* ctx);

// Prints `problem` and where the usage is; 2.
int Usage(std::string problem);
// Prints the failed call's error with its details; 1.
int Fail(const grpc::Status& status);
// Runs one unary call (`call(context)`) within `timeout`, carrying the command's trace; a call
// the server refused without running it (overloaded, shutting down) is retried after the delay
// the server advises.
grpc::Status Call(const std::function<grpc::Status(grpc::ClientContext*)>& call,
                  absl::Duration timeout = absl::Seconds(30));
// `m` as indented JSON.
std::string Json(const google::protobuf::Message& m);

// Commands that change admitd's state (admitctl_write.cc).
int Apply(Client& client, const Args& args);
int SubmitFiles(Client& client, const Args& args);
int Import(Client& client, const Args& args);
int Delete(Client& client, const Args& args);
int Admit(Client& client, const Args& args, bool explain);
int Release(Client& client, const Args& args);
int Resize(Client& client, const Args& args);
int SetActive(Client& client, const Args& args, bool active);
int Check(Client& client, const Args& args);

// Commands that read or watch it (admitctl_read.cc).
int Get(Client& client, const Args& args);
int Watch(Client& client, const Args& args);
int Events(Client& client, const Args& args);
int Audit(Client& client, const Args& args);
int Cycles(Client& client, const Args& args);
int Directives(Client& client, const Args& args);

}  // namespace admitd::clients

#endif  // ADMITD_CLIENTS_ADMITCTL_COMMANDS_H_
