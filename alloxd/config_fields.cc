// Fields several sections of alloxd.yaml share: tokens inline or in files, URLs, durations,
// listen addresses, two-way settings.
#include <cctype>
#include <charconv>

#include "alloxd/config_sections.h"
#include "core/input_file.h"

namespace allox::extender::config_yaml {
namespace {

// A token file holds one bearer token (a service-account JWT is ~1 KiB); anything far larger is
// a wrong path, refused before it is read.
constexpr std::size_t kMaxTokenFileBytes = 64u << 10;

// Printable ASCII without spaces: what an Authorization header carries after "Bearer ".
bool is_token(std::string_view token) {
  for (char c : token) {
    if (c <= ' ' || c >= 0x7f) return false;
  }
  return !token.empty();
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  return s.substr(start);
}

}  // namespace

std::optional<std::string> token_file(FieldReader& reader, const YAML::Node& map, const char* key,
                                      std::string_view subject) {
  const auto path = reader.text(map, key, subject, false);
  if (!path) return std::nullopt;
  auto text = read_regular_file(*path, kMaxTokenFileBytes);
  if (!text) {
    reader.fail(map[key], subject,
                std::string(key) + " must name a readable token file: " + text.message());
    return std::nullopt;
  }
  std::string token = trim(*text);
  if (token.empty()) {
    reader.fail(map[key], subject,
                std::string(key) + " must name a file holding a token, got \"" + *path +
                    "\", which is empty");
    return std::nullopt;
  }
  if (!is_token(token)) {
    // The file's contents are a secret (or not a token at all): never quoted.
    reader.fail(map[key], subject,
                std::string(key) + " must name a file holding one token, got \"" + *path +
                    "\", which holds spaces or control characters");
    return std::nullopt;
  }
  return token;
}

std::optional<std::string> inline_token(FieldReader& reader, const YAML::Node& map, const char* key,
                                        std::string_view subject) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return std::nullopt;
  if (!node.IsScalar() || node.Scalar().empty()) {
    reader.fail(node, subject, std::string(key) + " must be a non-empty token");
    return std::nullopt;
  }
  if (trim(node.Scalar()).empty()) {
    reader.fail(node, subject, std::string(key) + " must be a token, got only whitespace");
    return std::nullopt;
  }
  if (!is_token(node.Scalar())) {
    reader.fail(node, subject,
                std::string(key) + " must be a token without spaces or control characters");
    return std::nullopt;
  }
  return node.Scalar();
}

std::optional<std::string> url_problem(const std::string& url) {
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return std::string("it holds spaces or control characters");
    }
  }
  const std::size_t start = url.find("://") + 3;
  const std::size_t end = url.find_first_of("/?#", start);
  const std::string authority =
      url.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (authority.find('@') != std::string::npos) {
    return std::string("credentials belong in token or token_file, not in the URL");
  }
  // host, [IPv6], host:port or [IPv6]:port
  if (authority.empty()) return std::string("no host");
  std::string host = authority;
  std::optional<std::string> port;
  const bool bracketed = host.front() == '[';
  const std::size_t close = bracketed ? host.find(']') : std::string::npos;
  if (bracketed && close == std::string::npos) {
    return std::string("an IPv6 host needs its closing ']'");
  }
  const std::size_t colon = host.find(':', close == std::string::npos ? 0 : close);
  if (colon != std::string::npos) {
    if (close != std::string::npos && colon != close + 1) {
      return std::string("junk after the IPv6 host");
    }
    port = host.substr(colon + 1);
    host.resize(colon);
  } else if (close != std::string::npos && close + 1 != host.size()) {
    return std::string("junk after the IPv6 host");
  }
  if (host.empty() || host == "[]") return std::string("no host");
  if (port && port->empty()) return std::string("an empty port");
  if (port) {
    int number = 0;
    auto [at, ec] = std::from_chars(port->data(), port->data() + port->size(), number);
    if (ec != std::errc() || at != port->data() + port->size() || number < 1 || number > 65535) {
      return std::string("the port must be from 1 to 65535");
    }
  }
  return std::nullopt;
}

void read_seconds(FieldReader& reader, const YAML::Node& map, const char* key,
                  std::string_view subject, double min, double max, double& out) {
  const YAML::Node node = map[key];
  if (!node || node.IsNull()) return;
  char range[96];
  std::snprintf(range, sizeof range, "a number of seconds from %g to %g", min, max);
  const auto value = reader.number_at(node, subject, key, range, false);
  if (!value) return;
  if (*value < min || *value > max) {
    reader.fail(node, subject, std::string(key) + " must be " + range + ", got " + describe(node));
    return;
  }
  out = *value;
}

std::optional<ListenAddress> listen_address(FieldReader& reader, const YAML::Node& map,
                                            const char* key) {
  const auto text = reader.text(map, key, "", false);
  if (!text) return std::nullopt;
  auto address = parse_listen_address(*text);
  if (!address) {
    reader.fail(map[key], "", std::string(key) + " must be " + address.message());
    return std::nullopt;
  }
  return *address;
}

void read_either(FieldReader& reader, const YAML::Node& map, const char* key, const char* first,
                 const char* second, const char* yes, bool& out) {
  read_choice(
      reader, map, key, "",
      [&](const std::string& text) -> Expected<bool> {
        if (text == first || text == second) return text == yes;
        return Error{std::string(first) + " or " + second};
      },
      out);
}

}  // namespace allox::extender::config_yaml
