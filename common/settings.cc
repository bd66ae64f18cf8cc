#include "common/settings.h"

#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace admitd::settings {
namespace {

constexpr size_t kHelpWidth = 100;
constexpr size_t kHelpColumn = 36;

// The names of a flag spec ("-n,--namespace" -> {"-n", "--namespace"}).
std::vector<std::string> Names(const std::string& flag) {
  return absl::StrSplit(flag, ',', absl::SkipEmpty());
}

// The name a flag goes by in messages and docs: its first long name, else its first name.
std::string LongName(const std::string& flag) {
  std::vector<std::string> names = Names(flag);
  for (const std::string& n : names) {
    if (absl::StartsWith(n, "--")) return n;
  }
  return names.empty() ? "" : names[0];
}

size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "  --listen HOST:PORT   help..." wrapped at kHelpWidth, continuation lines at kHelpColumn.
void AppendHelpEntry(const std::string& left, const std::string& right, std::string* out) {
  std::string line = absl::StrCat("  ", left);
  if (line.size() + 2 > kHelpColumn) {
    absl::StrAppend(out, line, "\n");
    line.clear();
  }
  line.resize(kHelpColumn, ' ');
  bool first_word = true;
  for (absl::string_view word : absl::StrSplit(right, ' ', absl::SkipEmpty())) {
    if (!first_word && line.size() + 1 + word.size() > kHelpWidth) {
      absl::StrAppend(out, line, "\n");
      line = std::string(kHelpColumn, ' ');
      first_word = true;
    }
    absl::StrAppend(&line, first_word ? "" : " ", word);
    first_word = false;
  }
  absl::StrAppend(out, line, "\n");
}

std::string MarkdownCell(absl::string_view text) {
  return absl::StrReplaceAll(text, {{"|", "\\|"}});
}

// A YAML value as a parser reads it: a scalar as written, a sequence of scalars joined by
// commas, a mapping of scalars as key=value pairs joined by commas.
absl::StatusOr<std::string> AsText(const YAML::Node& node) {
  if (node.IsNull()) return std::string();
  if (node.IsScalar()) return node.Scalar();
  std::vector<std::string> parts;
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) {
      if (!item.IsScalar()) return absl::InvalidArgumentError("must be a list of plain values");
      parts.push_back(item.Scalar());
    }
  } else if (node.IsMap()) {
    for (const auto& kv : node) {
      if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
        return absl::InvalidArgumentError("must be a mapping of plain values");
      }
      parts.push_back(absl::StrCat(kv.first.Scalar(), "=", kv.second.Scalar()));
    }
  }
  return absl::StrJoin(parts, ",");
}

}  // namespace

const std::string* CommandLine::Last(const std::string& flag) const {
  for (auto it = values.rbegin(); it != values.rend(); ++it) {
    std::vector<std::string> names = Names(it->first->flag);
    if (std::find(names.begin(), names.end(), flag) != names.end()) return &it->second;
  }
  return nullptr;
}

std::string Closest(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const std::string& k : known) {
    const size_t d = EditDistance(name, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  // A typo: a few edits, and fewer than a third of the name.
  if (best_distance == 0 || best_distance > 2 || best_distance * 3 > name.size()) return "";
  return best;
}

void Table::Add(Setting setting) { settings_.push_back(std::move(setting)); }

absl::StatusOr<CommandLine> Table::Scan(const std::vector<std::string>& args,
                                        bool positional_allowed) const {
  CLI::App app(program_);
  app.allow_extras(true);
  app.set_help_flag();
  CLI::Option* help = app.add_flag("-h,--help");
  std::map<const CLI::Option*, const Setting*> by_option;
  std::vector<std::string> known;
  for (const Setting& s : settings_) {
    if (s.flag.empty()) continue;
    for (const std::string& n : Names(s.flag)) known.push_back(n);
    CLI::Option* option;
    if (s.switch_value.empty()) {
      option = app.add_option(s.flag);
    } else if (s.switch_value == "true") {
      option = app.add_flag(s.flag);
    } else {
      std::vector<std::string> names = Names(s.flag);
      for (std::string& n : names) absl::StrAppend(&n, "{", s.switch_value, "}");
      option = app.add_flag(absl::StrJoin(names, ","));
    }
    option->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    by_option[option] = &s;
  }
  // CLI11 drops empty values ("--webhook-listen=" means "no webhook"): they travel as a stand-in
  // and come back empty. It reads the arguments from the back.
  static const std::string kEmpty = "\x01(empty)";
  auto restore = [](const std::string& v) { return v == kEmpty ? std::string() : v; };
  std::vector<std::string> reversed;
  for (auto it = args.rbegin(); it != args.rend(); ++it) {
    if (it->empty()) {
      reversed.push_back(kEmpty);
    } else if ((*it)[0] == '-' && it->back() == '=') {
      reversed.push_back(*it + kEmpty);
    } else {
      reversed.push_back(*it);
    }
  }
  try {
    app.parse(reversed);
  } catch (const CLI::ArgumentMismatch& e) {
    // "--listen: 1 required TEXT missing"
    std::string what = e.what();
    std::string name = what.substr(0, what.find(':'));
    for (const Setting& s : settings_) {
      std::vector<std::string> names = Names(s.flag);
      if (std::find(names.begin(), names.end(), name) != names.end()) name = LongName(s.flag);
    }
    return absl::InvalidArgumentError(absl::StrCat(name, ": needs a value"));
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(e.what());
  }
  CommandLine line;
  line.help = help->count() > 0;
  std::map<const CLI::Option*, size_t> next_result;
  for (const CLI::Option* option : app.parse_order()) {
    auto it = by_option.find(option);
    if (it == by_option.end()) continue;
    size_t& i = next_result[option];
    if (i < option->results().size()) {
      line.values.emplace_back(it->second, restore(option->results()[i++]));
    }
  }
  bool flags_ended = false;
  for (const std::string& stand_in : app.remaining()) {
    const std::string arg = restore(stand_in);
    if (!flags_ended && arg == "--") {
      flags_ended = true;
      continue;
    }
    if (!flags_ended && arg.size() > 1 && arg[0] == '-') {
      const std::string name = arg.substr(0, arg.find('='));
      const std::string closest = Closest(name, known);
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag ", name,
          closest.empty() ? " (see --help)" : absl::StrCat(" (did you mean ", closest, "?)")));
    }
    if (!positional_allowed && !line.help) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", arg, "\""));
    }
    line.positional.push_back(arg);
  }
  return line;
}

absl::Status Table::Apply(const CommandLine& line) const {
  for (const auto& [setting, value] : line.values) {
    if (!setting->parse) continue;
    if (absl::Status s = setting->parse(value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(LongName(setting->flag), ": ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CommandLine> Table::Parse(const std::vector<std::string>& args,
                                         bool positional_allowed) const {
  absl::StatusOr<CommandLine> line = Scan(args, positional_allowed);
  if (!line.ok() || line->help) return line;
  if (absl::Status s = Apply(*line); !s.ok()) return s;
  return line;
}

namespace {

// Runs the parser of each key of `root` (a YAML document) found in `settings`.
absl::Status LoadRoot(const std::vector<Setting>& settings, const YAML::Node& root,
                      const std::string& where) {
  if (root.IsNull()) return absl::OkStatus();
  if (!root.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the config file must be a YAML mapping"));
  }
  std::function<absl::Status(const YAML::Node&, const std::string&)> load =
      [&](const YAML::Node& map, const std::string& prefix) -> absl::Status {
    for (const auto& kv : map) {
      const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "?";
      const std::string key = prefix.empty() ? name : absl::StrCat(prefix, ".", name);
      auto bad = [&](absl::string_view what) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": ", key, ": ", what));
      };
      const Setting* setting = nullptr;
      bool has_children = false;
      std::vector<std::string> siblings;  // the known keys beside this one
      for (const Setting& s : settings) {
        if (s.key.empty()) continue;
        if (s.key == key) setting = &s;
        if (absl::StartsWith(s.key, key + ".")) has_children = true;
        absl::string_view rest = s.key;
        if (!prefix.empty() && !absl::ConsumePrefix(&rest, prefix + ".")) continue;
        std::string sibling(rest.substr(0, rest.find('.')));
        if (std::find(siblings.begin(), siblings.end(), sibling) == siblings.end()) {
          siblings.push_back(sibling);
        }
      }
      if (setting != nullptr && setting->section) {
        if (!kv.second.IsMap() && !kv.second.IsNull()) return bad("must be a mapping");
        if (absl::Status s = setting->parse("true"); !s.ok()) return bad(s.message());
        if (kv.second.IsMap()) {
          if (absl::Status s = load(kv.second, key); !s.ok()) return s;
        }
      } else if (setting != nullptr) {
        absl::StatusOr<std::string> text = AsText(kv.second);
        if (!text.ok()) return bad(text.status().message());
        if (absl::Status s = setting->parse(*text); !s.ok()) return bad(s.message());
      } else if (has_children) {
        if (!kv.second.IsMap()) return bad("must be a mapping");
        if (absl::Status s = load(kv.second, key); !s.ok()) return s;
      } else {
        const std::string closest = Closest(name, siblings);
        return bad(closest.empty()
                       ? absl::StrCat("unknown key (known: ", absl::StrJoin(siblings, ", "), ")")
                       : absl::StrCat("unknown key (did you mean ", closest, "?)"));
      }
    }
    return absl::OkStatus();
  };
  return load(root, "");
}

}  // namespace

absl::Status Table::LoadYamlFile(const std::string& path) const {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", e.what()));
  }
  return LoadRoot(settings_, root, path);
}

absl::Status Table::LoadYaml(const std::string& text, const std::string& where) const {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", e.what()));
  }
  return LoadRoot(settings_, root, where);
}

std::string Table::FlagHelp() const {
  std::string out;
  for (const Setting& s : settings_) {
    if (s.flag.empty()) continue;
    std::string left = absl::StrJoin(Names(s.flag), ", ");
    if (s.switch_value.empty()) {
      absl::StrAppend(&left, " ", s.value);
    } else if (!s.value.empty()) {
      absl::StrAppend(&left, "[=", s.value, "]");
    }
    std::string right = s.help;
    std::vector<std::string> notes;
    if (!s.default_text.empty()) notes.push_back(absl::StrCat("default ", s.default_text));
    if (s.repeatable) notes.push_back("repeatable");
    if (!s.key.empty()) notes.push_back(absl::StrCat("key ", s.key));
    if (!notes.empty()) absl::StrAppend(&right, " (", absl::StrJoin(notes, "; "), ")");
    AppendHelpEntry(left, right, &out);
  }
  return out;
}

std::string Table::MarkdownTable() const {
  const bool keys = std::any_of(settings_.begin(), settings_.end(),
                                [](const Setting& s) { return !s.key.empty(); });
  std::string out = keys ? "| Flag | Config key | Default | Meaning |\n|---|---|---|---|\n"
                         : "| Flag | Default | Meaning |\n|---|---|---|\n";
  for (const Setting& s : settings_) {
    std::string flag;
    if (!s.flag.empty()) {
      flag = absl::StrJoin(Names(s.flag), " ", [&](std::string* o, const std::string& n) {
        absl::StrAppend(o, "`", n,
                        s.switch_value.empty() ? absl::StrCat(" ", s.value)
                        : s.value.empty()      ? ""
                                               : absl::StrCat("[=", s.value, "]"),
                        "`");
      });
      if (s.repeatable) absl::StrAppend(&flag, " (repeatable)");
    }
    const std::string def = s.default_text.empty() ? "" : absl::StrCat("`", s.default_text, "`");
    if (keys) {
      const std::string key = s.key.empty() ? "" : absl::StrCat("`", s.key, "`");
      absl::StrAppend(&out, "| ", MarkdownCell(flag), " | ", key, " | ", MarkdownCell(def), " | ",
                      MarkdownCell(s.help), " |\n");
    } else {
      absl::StrAppend(&out, "| ", MarkdownCell(flag), " | ", MarkdownCell(def), " | ",
                      MarkdownCell(s.help), " |\n");
    }
  }
  return out;
}

}  // namespace admitd::settings
