#include "whatif/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "models/error.h"

namespace pw::whatif {

void Table::add_row(const Json& obj) {
  PW_CHECK(obj.is_object(), "table row must be an object");
  std::vector<Json> row;
  row.reserve(columns.size());
  for (const std::string& c : columns) row.push_back(obj.contains(c) ? obj.at(c) : Json(nullptr));
  rows.push_back(std::move(row));
}

int Table::column(const std::string& name) const {
  auto it = std::find(columns.begin(), columns.end(), name);
  return it == columns.end() ? -1 : static_cast<int>(it - columns.begin());
}

std::string cell_text(const Json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return v.dump();
  if (v.is_number_float()) {
    double d = v.get<double>();
    char buf[40];
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", d);
    else std::snprintf(buf, sizeof buf, "%.10g", d);
    return buf;
  }
  return v.dump();
}

std::string to_csv(const Table& t) {
  auto quote = [](const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string out;
  for (size_t i = 0; i < t.columns.size(); ++i) out += (i ? "," : "") + quote(t.columns[i]);
  out += '\n';
  for (const auto& row : t.rows) {
    PW_CHECK(row.size() == t.columns.size(), "table row has the wrong number of cells");
    for (size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + quote(cell_text(row[i]));
    out += '\n';
  }
  return out;
}

Json rows_to_json(const Table& t) {
  Json out = Json::array();
  for (const auto& row : t.rows) {
    PW_CHECK(row.size() == t.columns.size(), "table row has the wrong number of cells");
    Json o = Json::object();
    for (size_t i = 0; i < row.size(); ++i) o[t.columns[i]] = row[i];
    out.push_back(std::move(o));
  }
  return out;
}

void to_json(Json& j, const StudyRows& rows) {
  j = Json{{"format", "pipewright.whatif-rows/1"}, {"study", rows.study}, {"rows", rows_to_json(rows.table)}};
}

std::string to_text(const Table& t) {
  size_t n = t.columns.size();
  std::vector<size_t> width(n);
  std::vector<bool> numeric(n, true);
  for (size_t i = 0; i < n; ++i) width[i] = t.columns[i].size();
  auto shown = [](const Json& v) { return v.is_null() ? std::string("-") : cell_text(v); };
  for (const auto& row : t.rows)
    for (size_t i = 0; i < n; ++i) {
      width[i] = std::max(width[i], shown(row[i]).size());
      if (!row[i].is_number() && !row[i].is_null()) numeric[i] = false;
    }
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (size_t i = 0; i < n; ++i) {
      std::string pad(width[i] - cells[i].size(), ' ');
      l += (i ? "  " : "") + (numeric[i] ? pad + cells[i] : cells[i] + pad);
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + '\n';
  };
  line(t.columns);
  for (const auto& row : t.rows) {
    std::vector<std::string> cells;
    for (const Json& v : row) cells.push_back(shown(v));
    line(cells);
  }
  return out;
}

}  // namespace pw::whatif
