// A program's settings, each declared once: its command-line flag, its config-file key, the
// text of its value, its default, its help line and the parser that reads and checks a value.
// From that one table come the command-line parser (CLI11 underneath), the YAML config reader,
// the --help text, the Markdown tables of the docs and errors that name the flag, or the file
// and key, at fault (an unknown name gets the closest known one suggested).
//
//   settings::Table table("admitd");
//   table.Add({.flag = "--listen", .key = "listen", .value = "HOST:PORT",
//              .help = "the gRPC address", .parse = settings::String(&config.listen)});
//   ADMITD_ASSIGN_OR_RETURN(settings::CommandLine line, table.Scan(args));
//   if (const std::string* file = line.Last("--config"))
//   ADMITD_RETURN_IF_ERROR(table.LoadYamlFile(*file)); ADMITD_RETURN_IF_ERROR(table.Apply(line));
//   // flags win over the file
//
// A parser receives a value as text, from the command line or from the file: a YAML scalar as
// written, a sequence as its items joined by commas, a mapping as "key=value" pairs joined by
// commas. Nested mappings are reached by dotted keys ("multiKueue.origin"); a `section` setting
// is told that its mapping is present before the keys inside it are read. Errors a parser
// returns say what is wrong with the value; the table adds where it came from
// ("--listen: ..." or "<file>: listen: ...").
//
// Thread safety: a Table is built and used on one thread; its parsers write where they point.
#ifndef ADMITD_COMMON_SETTINGS_H_
#define ADMITD_COMMON_SETTINGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace admitd::settings {

// Reads one value; InvalidArgument says what is wrong with it (without naming the setting).
using Parser = std::function<absl::Status(const std::string& value)>;

struct Setting {
  // The flag's names as CLI11 writes them: "--listen", or "-n,--namespace" (the long name is the
  // setting's name in messages and docs). Empty: a config-file key only.
  std::string flag;
  // The config-file key, dotted for nested mappings ("multiKueue.origin"). Empty: a flag only.
  std::string key;
  // The value's placeholder in help ("HOST:PORT"). Empty for a switch.
  std::string value;
  // One sentence; the help text wraps it.
  std::string help;
  // The default as shown in help and docs; empty: none shown.
  std::string default_text;
  // A switch: the flag alone means this value ("true" for most); "--flag=VALUE" gives another.
  // Empty: the flag takes a value, "--flag VALUE" or "--flag=VALUE".
  std::string switch_value;
  // The flag may be given more than once, each value passed to the parser in turn (help says so).
  bool repeatable = false;
  // The key names a mapping whose presence is the value (Kueue's Configuration turns a feature
  // on by its section's presence): the parser gets "true" when the file has the key (a mapping,
  // possibly empty, or nothing), and the keys below it are read as settings of their own.
  bool section = false;
  Parser parse;
};

// The flags found on a command line, in order, and the other arguments.
struct CommandLine {
  std::vector<std::pair<const Setting*, std::string>> values;
  std::vector<std::string> positional;
  bool help = false;  // -h or --help was given
  // The last value given for the flag named `flag` (any of its names), or null.
  const std::string* Last(const std::string& flag) const;
};

class Table {
 public:
  explicit Table(std::string program) : program_(std::move(program)) {}

  // Declares a setting. Its flag and key must be new to the table.
  void Add(Setting setting);
  const std::vector<Setting>& settings() const { return settings_; }

  // Splits `args` into flags and other arguments without applying anything. INVALID_ARGUMENT for
  // an unknown flag ("unknown flag --bogus (did you mean --bogux?)", or "(see --help)"), a value
  // missing ("--listen: needs a value"), or, unless `positional_allowed`, any argument that is
  // not a flag. "--" ends the flags.
  absl::StatusOr<CommandLine> Scan(const std::vector<std::string>& args,
                                   bool positional_allowed = false) const;
  // Runs each flag's parser in command-line order; the first error is returned, prefixed with
  // the flag's name.
  absl::Status Apply(const CommandLine& line) const;
  // Scan and Apply.
  absl::StatusOr<CommandLine> Parse(const std::vector<std::string>& args,
                                    bool positional_allowed = false) const;

  // Reads a YAML mapping from `path` and runs the parser of each key found. Errors name the file
  // and the key: "<path>: listenn: unknown key (did you mean listen?)".
  absl::Status LoadYamlFile(const std::string& path) const;
  // The same, from YAML text; `where` names it in errors.
  absl::Status LoadYaml(const std::string& text, const std::string& where) const;

  // The flags, one entry each, for --help: names and value, then the help, the default and
  // the config key, wrapped at 100 columns.
  std::string FlagHelp() const;
  // The docs' table: | Flag | Config key | Default | Meaning | (the key column only when some
  // setting has a key).
  std::string MarkdownTable() const;

 private:
  std::string program_;
  std::vector<Setting> settings_;
};

// The closest of `known` to `name` when it is close enough to be a likely typo, else "".
std::string Closest(const std::string& name, const std::vector<std::string>& known);

// ---- Parsers -------------------------------------------------------------------------------
// Each writes to `out` only when the value is valid. Messages end with `, not "<value>"`.

Parser String(std::string* out);
// Any non-empty text.
Parser NonEmpty(std::string* out);
// true or false (also 1/0, yes/no, t/f, y/n, any case).
Parser Bool(bool* out);
// The opposite of the value: --no-sync.
Parser NegatedBool(bool* out);
// An integer within [min, max]: "must be a positive integer", "must be a non-negative
// integer" or "must be an integer from <min> to <max>".
Parser Int(int64_t* out, int64_t min, int64_t max);
Parser Int(int* out, int min, int max);
Parser Uint(uint64_t* out, uint64_t min);
// A number within [min, max].
Parser Double(double* out, double min, double max);
// A Go-style duration (2ms, 1s, 1m30s) of at least `min`.
Parser Duration(absl::Duration* out, absl::Duration min = absl::ZeroDuration());
// Bytes: digits with an optional Ki, Mi or Gi suffix, at least `min`.
Parser Bytes(uint64_t* out, uint64_t min);
// A comma-separated list (a YAML sequence); the value replaces the whole list.
Parser List(std::vector<std::string>* out);
// One of `choices`.
Parser Choice(std::string* out, std::vector<std::string> choices);
// Any text `valid` accepts: "must be <want>, not ...".
Parser Checked(std::string* out, std::function<bool(const std::string&)> valid, std::string want);

}  // namespace admitd::settings

#endif  // ADMITD_COMMON_SETTINGS_H_
