// Result tables of the what-if studies and their text, CSV and JSON renderings.
//
// A Table is a list of named columns and rows of JSON scalars (numbers, strings, booleans,
// null for "not applicable"). Rows must have one cell per column (checked). Renderers are
// pure functions; numbers print with up to 10 significant digits (integers exactly).
#pragma once

#include <string>
#include <vector>

#include "models/json_util.h"

namespace pw::whatif {

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<Json>> rows;

  // Appends a row from an object: cell i is obj[columns[i]] (null when absent).
  void add_row(const Json& obj);
  int column(const std::string& name) const;  // index, or -1
};

// RFC 4180: header line, one line per row, "\n" line ends; cells with a comma, quote or line
// break are quoted with doubled quotes; null is an empty cell.
std::string to_csv(const Table& t);
// [{column: value, ...}, ...] in row order, keys in column order.
Json rows_to_json(const Table& t);

// A study's table as `whatif max-model` and `whatif throughput` print it with --json: format
// pipewright.whatif-rows/1, {"format", "study": study, "rows": rows_to_json(table)}. Refers to
// the table, which must outlive it.
struct StudyRows {
  std::string study;
  const Table& table;
};
void to_json(Json& j, const StudyRows& rows);
// Fixed-width text for a terminal: right-aligned numbers, left-aligned text, "-" for null;
// byte counts are shown as given (callers convert to GiB columns for readability).
std::string to_text(const Table& t);
// One cell as CSV/text shows it (without CSV quoting).
std::string cell_text(const Json& v);

}  // namespace pw::whatif
