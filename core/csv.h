// CSV records as allox reads and writes them (traces, jobs.csv, shares.csv, comparisons): the one
// splitter, field quoting and number format, so what one module writes the other reads back.
//
// RFC 4180 quoting ("a ""b""", fields holding ',' or '"'), one record per line (no embedded
// newlines), a '\r' outside quotes ignored. Spaces and tabs outside quotes at a field's ends are
// dropped ("a , b" is "a" and "b"), so a field that starts or ends with one is written quoted.
// Pure functions.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace allox {

// Splits one record into its fields, unquoted, blanks outside quotes at their ends dropped.
// Error: "unterminated quote".
Expected<std::vector<std::string>> split_csv_record(const std::string& line);

// `text` as one field: quoted (inner quotes doubled) when it holds ',', '"', '\n' or '\r', or
// starts or ends with a space or a tab.
std::string csv_field(const std::string& text);

// A plain decimal filling all of `text` ("3", "-0.5", "1e+20"), finite and in double's range; not
// hex, "inf", "nan" or surrounding spaces. The number syntax of every allox text input: CSV
// fields, traces and YAML scalars (core/yaml_fields.h).
std::optional<double> parse_decimal(const std::string& text);

// The shortest decimal text that reads back as the same double ("0.1", "1e+20").
std::string csv_number(double value);

}  // namespace allox
