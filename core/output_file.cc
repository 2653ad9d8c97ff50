#include "core/output_file.h"

#include <fstream>

namespace allox {

Status write_output_file(const std::filesystem::path& path,
                         const std::function<void(std::ostream&)>& body) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  std::ofstream out(path);
  if (!out) return Error{"cannot write " + path.string()};
  body(out);
  out.close();
  if (!out) return Error{"error writing " + path.string()};
  return OkStatus();
}

}  // namespace allox
