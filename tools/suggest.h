// Suggestions for mistyped names: the subcommand or flag a user most likely meant.
// nearest_name: the name of `names` nearest to `word` in edit distance (insertions, deletions,
// substitutions and transpositions of neighbours, each 1), if it is at most max(1, |word| / 3)
// edits away; "" otherwise (also on a tie, where no one guess is better). Pure.
#pragma once

#include <string>
#include <vector>

namespace pw::tools {

std::string nearest_name(const std::string& word, const std::vector<std::string>& names);

// "unknown command \"plna\" (did you mean \"plan\"?); commands: cluster, demo, ..." for a word
// that names no command.
std::string unknown_command_message(const std::string& word, const std::vector<std::string>& commands);

// For the arguments of a command that were not expected (CLI11's ExtrasError): " (did you mean
// --devices for --devcies?)" naming each "--flag" of `args` that is not among `flags` and has a
// nearest one; "" when none has. A "--flag" whose name is that of one of `positionals` (the
// command's positional arguments, e.g. "MODEL" of `pipewright model MODEL`) gets " (did you mean
// MODEL, a positional argument given without a flag, for --model?)" instead: a near flag
// (--d-model) would mislead.
std::string unknown_flag_hint(const std::vector<std::string>& args, const std::vector<std::string>& flags,
                              const std::vector<std::string>& positionals = {});

}  // namespace pw::tools
