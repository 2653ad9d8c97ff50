// Escaping text for HTML and SVG output (the status page, Gantt charts): &, <, >, " and ' become
// entities, so a job or user name can never break out of an element or an attribute.
#pragma once

#include <string>

namespace allox {

std::string markup_escape(const std::string& text);

}  // namespace allox
