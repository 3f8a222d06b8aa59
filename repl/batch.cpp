#include "repl/batch.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runtime/platform.hpp"

namespace pxl::cli {

namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields(1);
  for (char c : line) {
    if (c == '\t')
      fields.emplace_back();
    else
      fields.back() += c;
  }
  return fields;
}

bool write_all(int fd, const std::string& bytes) {
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string read_all(int fd) {
  std::string s;
  ::lseek(fd, 0, SEEK_SET);
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    s.append(buf, static_cast<size_t>(n));
  }
  return s;
}

void flush_all() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
}

// Points fds 1 and 2 at fresh in-memory files for the scope, then back.
class Capture {
public:
  Capture() {
    flush_all();
    out_ = ::memfd_create("pxl-batch-out", 0);
    err_ = ::memfd_create("pxl-batch-err", 0);
    saved_out_ = ::dup(STDOUT_FILENO);
    saved_err_ = ::dup(STDERR_FILENO);
    ok_ = out_ >= 0 && err_ >= 0 && saved_out_ >= 0 && saved_err_ >= 0 &&
          ::dup2(out_, STDOUT_FILENO) >= 0 && ::dup2(err_, STDERR_FILENO) >= 0;
  }
  ~Capture() {
    restore();
    for (int fd : {out_, err_, saved_out_, saved_err_})
      if (fd >= 0) ::close(fd);
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  bool ok() const { return ok_; }
  // Restores fds 1 and 2 and returns what the program wrote to each.
  std::pair<std::string, std::string> finish() {
    restore();
    return {read_all(out_), read_all(err_)};
  }

private:
  void restore() {
    if (restored_) return;
    restored_ = true;
    flush_all();
    if (saved_out_ >= 0) ::dup2(saved_out_, STDOUT_FILENO);
    if (saved_err_ >= 0) ::dup2(saved_err_, STDERR_FILENO);
  }
  int out_ = -1, err_ = -1, saved_out_ = -1, saved_err_ = -1;
  bool ok_ = false, restored_ = false;
};

} // namespace

int run_batch(const RunProgram& run) {
  // Requests come on the original stdin and results go to the original
  // stdout; the programs get /dev/null and in-memory files instead.
  int requests_fd = ::dup(STDIN_FILENO);
  int results_fd = ::dup(STDOUT_FILENO);
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (requests_fd < 0 || results_fd < 0 || null_fd < 0 || ::dup2(null_fd, STDIN_FILENO) < 0) {
    std::cerr << "pxl: error: --batch cannot set up its files: " << std::strerror(errno) << "\n";
    return 1;
  }
  ::close(null_fd);
  FILE* requests = ::fdopen(requests_fd, "r");
  if (!requests) return 1;
  std::string home;
  if (char* cwd = ::getcwd(nullptr, 0)) {
    home = cwd;
    std::free(cwd);
  }
  std::shared_ptr<SharedDevices> shared = make_shared_devices();
  char* line = nullptr;
  size_t cap = 0;
  int result = 0;
  for (ssize_t len; (len = ::getline(&line, &cap, requests)) >= 0;) {
    std::string text(line, static_cast<size_t>(len));
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (text.empty()) continue;
    std::vector<std::string> fields = split_tabs(text);
    int status = 2;
    std::string out, err;
    if (fields.size() < 3) {
      err = "pxl: error: --batch: a request is DIR<TAB>PXL_DEVICES<TAB>ARGS...\n";
    } else if (::chdir(fields[0].c_str()) != 0) {
      err = "pxl: error: --batch: cannot enter '" + fields[0] + "': " + std::strerror(errno) + "\n";
    } else {
      std::vector<std::string> args(fields.begin() + 2, fields.end());
      ParseResult parsed =
          parse(args, fields[1].empty() ? nullptr : fields[1].c_str(), std::getenv("PXL_PLATFORM"));
      if (!parsed.options) {
        err = "pxl: error: " + parsed.error + "\n";
      } else if (parsed.options->mode != Mode::File && parsed.options->mode != Mode::Code) {
        err = "pxl: error: --batch: a request runs a script file or -c code\n";
      } else {
        Capture capture;
        if (!capture.ok()) {
          err = std::string("pxl: error: --batch cannot capture output: ") + std::strerror(errno) +
                "\n";
        } else {
          status = run(*parsed.options, shared);
          std::tie(out, err) = capture.finish();
        }
      }
    }
    if (!home.empty() && ::chdir(home.c_str()) != 0) result = 1;
    std::string header = "pxl-batch " + std::to_string(status) + " " + std::to_string(out.size()) +
                         " " + std::to_string(err.size()) + "\n";
    if (!write_all(results_fd, header + out + err)) {
      result = 1;
      break;
    }
  }
  std::free(line);
  std::fclose(requests);
  ::close(results_fd);
  return result;
}

} // namespace pxl::cli
