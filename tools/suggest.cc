#include "tools/suggest.h"

#include <algorithm>
#include <cctype>

namespace pw::tools {

namespace {

// Optimal string alignment distance.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

}  // namespace

std::string nearest_name(const std::string& word, const std::vector<std::string>& names) {
  if (word.size() > 64) return "";  // nobody mistypes a name that long; keep the table small
  const size_t limit = std::max<size_t>(1, word.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  bool tie = false;
  for (const std::string& n : names) {
    if (n.size() > 64) continue;
    const size_t dist = edit_distance(word, n);
    if (dist < best_distance) {
      best = n;
      best_distance = dist;
      tie = false;
    } else if (dist == best_distance && n != best) {
      tie = true;
    }
  }
  return best_distance <= limit && !tie ? best : "";
}

std::string unknown_command_message(const std::string& word, const std::vector<std::string>& commands) {
  std::string msg = "unknown command \"" + word + "\"";
  const std::string guess = nearest_name(word, commands);
  if (!guess.empty()) msg += " (did you mean \"" + guess + "\"?)";
  msg += "; commands:";
  for (size_t i = 0; i < commands.size(); ++i) msg += (i ? ", " : " ") + commands[i];
  return msg;
}

std::string unknown_flag_hint(const std::vector<std::string>& args, const std::vector<std::string>& flags,
                              const std::vector<std::string>& positionals) {
  const auto lower = [](std::string t) {
    for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return t;
  };
  std::string hint;
  for (const std::string& arg : args) {
    if (arg.rfind("--", 0) != 0) continue;
    const std::string flag = arg.substr(0, arg.find('='));
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
    std::string guess;
    for (const std::string& p : positionals)
      if (lower(p) == lower(flag.substr(2))) guess = p + ", a positional argument given without a flag,";
    if (guess.empty()) guess = nearest_name(flag, flags);
    if (guess.empty()) continue;
    hint += (hint.empty() ? " (did you mean " : "; ") + guess + " for " + flag;
  }
  return hint.empty() ? hint : hint + "?)";
}

}  // namespace pw::tools
