// Names read from user files (jobs, users, machines) end up in JSON outputs and terminals, so
// they must be text: valid UTF-8 (a JSON writer refuses anything else) and free of control
// characters, which would rewrite a terminal line or split a CSV record.
#pragma once

#include <string_view>

namespace allox {

// True for valid UTF-8 (shortest forms, no surrogates, at most U+10FFFF) holding no C0 control
// character other than tab, and no DEL.
bool is_utf8_text(std::string_view text);

}  // namespace allox
