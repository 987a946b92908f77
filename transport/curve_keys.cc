#include "transport/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <zmq.h>

namespace palisade::transport {
namespace {

constexpr size_t kMaxKeyFileBytes = 4096;

Status bad(const std::string& path, const std::string& problem) {
  return Status(Code::kBadRequest, "key file " + path + ": " + problem);
}

Status io_error(const std::string& what, const std::string& path) {
  return Status(Code::kStorageError, what + " " + path + ": " + std::strerror(errno));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The public key that belongs to a (valid) secret key.
std::string public_of(const std::string& secret_key) {
  char out[kCurveKeyZ85Chars + 1] = {};
  if (zmq_curve_public(out, secret_key.c_str()) != 0) return "";
  return out;
}

}  // namespace

CurveKeyPair generate_curve_keys() {
  char pub[kCurveKeyZ85Chars + 1] = {};
  char sec[kCurveKeyZ85Chars + 1] = {};
  if (zmq_curve_keypair(pub, sec) != 0) {
    throw std::runtime_error(std::string("cannot make a CURVE key pair (is libzmq built with CURVE?): ") +
                             zmq_strerror(zmq_errno()));
  }
  return {pub, sec};
}

std::string key_file_text(const KeyFile& file) {
  return "# palisade key pair of identity \"" + file.identity +
         "\" (palisade keygen). The secret key proves\n"
         "# this identity: keep this file readable by its owner only (mode 0600).\n"
         "identity = \"" +
         file.identity + "\"\npublic-key = \"" + file.keys.public_key + "\"\nsecret-key = \"" + file.keys.secret_key +
         "\"\n";
}

Status write_key_file(const std::string& path, const KeyFile& file) {
  if (!is_identity_name(file.identity)) return bad(path, "'" + file.identity + "' is not an identity name");
  const std::string text = key_file_text(file);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) return bad(path, "exists already; a key file is never replaced");
  if (fd < 0) return io_error("cannot create key file", path);
  bool ok = ::fchmod(fd, 0600) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    errno = saved;
    return io_error("cannot write key file", path);
  }
  return Status::ok();
}

Result<KeyFile> parse_key_file(std::string_view text, const std::string& path) {
  KeyFile file;
  bool seen[3] = {false, false, false};
  const char* const names[3] = {"identity", "public-key", "secret-key"};
  std::string* const fields[3] = {&file.identity, &file.keys.public_key, &file.keys.secret_key};
  size_t line_no = 0;
  while (!text.empty()) {
    ++line_no;
    const size_t end = text.find('\n');
    std::string_view line = trim(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (line.empty() || line.front() == '#') continue;
    const std::string at = "line " + std::to_string(line_no) + ": ";
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) return bad(path, at + "expected name = \"value\"");
    const std::string_view name = trim(line.substr(0, eq));
    const std::string_view value = trim(line.substr(eq + 1));
    if (value.size() < 2 || value.front() != '"' || value.back() != '"' ||
        value.substr(1, value.size() - 2).find_first_of("\"\\") != std::string_view::npos) {
      return bad(path, at + "the value of '" + std::string(name) + "' must be a plain \"quoted\" string");
    }
    size_t i = 0;
    while (i < 3 && name != names[i]) ++i;
    if (i == 3) return bad(path, at + "unknown field '" + std::string(name) + "'");
    if (seen[i]) return bad(path, at + "'" + std::string(name) + "' given twice");
    seen[i] = true;
    *fields[i] = std::string(value.substr(1, value.size() - 2));
  }
  for (size_t i = 0; i < 3; ++i) {
    if (!seen[i]) return bad(path, std::string("no '") + names[i] + "' (palisade keygen NAME writes a key file)");
  }
  if (!is_identity_name(file.identity)) return bad(path, "'" + file.identity + "' is not an identity name");
  if (!is_z85_key(file.keys.public_key)) return bad(path, "public-key is not 40 characters of Z85");
  if (!is_z85_key(file.keys.secret_key)) return bad(path, "secret-key is not 40 characters of Z85");
  if (public_of(file.keys.secret_key) != file.keys.public_key) {
    return bad(path, "public-key is not the secret key's: the file was edited or mixes two key pairs");
  }
  return file;
}

Result<KeyFile> read_key_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot read key file", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const Status s = io_error("cannot read key file", path);
    ::close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return bad(path, "not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return bad(path, std::string("group or others may read it (mode ") + mode + "); run chmod 600 " + path);
  }
  std::string text(kMaxKeyFileBytes + 1, '\0');
  size_t got = 0;
  for (ssize_t n; got < text.size() && (n = ::read(fd, text.data() + got, text.size() - got)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const Status s = io_error("cannot read key file", path);
      ::close(fd);
      return s;
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got > kMaxKeyFileBytes) return bad(path, "larger than a key file can be");
  text.resize(got);
  return parse_key_file(text, path);
}

}  // namespace palisade::transport
