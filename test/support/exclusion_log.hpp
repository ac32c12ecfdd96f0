// The mutual-exclusion oracle for lock tests. Every contender, in any process or language,
// appends "enter <who>" right after it gets the lock and "leave <who>" right before it releases,
// each line one O_APPEND write (atomic and totally ordered by the kernel). check() then replays
// the file: an "enter" while someone is inside, or a "leave" by someone who is not inside, is
// a violation. Java and Python peers write the same lines to the same file.
// A shared (read/write) lock writes "enter-read/leave-read/enter-write/leave-write <who>"
// instead; test/interop/run_interop.py replays those (a writer entering while anyone is inside,
// a reader entering while a writer is inside).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::test {

class exclusion_log {
 public:
  explicit exclusion_log(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot open " + path_);
  }
  ~exclusion_log() {
    if (fd_ >= 0) ::close(fd_);
  }
  exclusion_log(const exclusion_log&) = delete;
  exclusion_log& operator=(const exclusion_log&) = delete;

  void enter(std::string_view who) { write_line("enter ", who); }
  void leave(std::string_view who) { write_line("leave ", who); }
  void enter_read(std::string_view who) { write_line("enter-read ", who); }
  void leave_read(std::string_view who) { write_line("leave-read ", who); }
  void enter_write(std::string_view who) { write_line("enter-write ", who); }
  void leave_write(std::string_view who) { write_line("leave-write ", who); }
  const std::string& path() const noexcept { return path_; }

  struct result {
    int entries = 0;
    int violations = 0;
    std::vector<std::string> order;  // who entered, in order
  };

  static result check(const std::string& path) {
    result r;
    std::ifstream in(path);
    std::string line, inside;
    while (std::getline(in, line)) {
      if (line.rfind("enter ", 0) == 0) {
        std::string who = line.substr(6);
        ++r.entries;
        r.order.push_back(who);
        if (!inside.empty()) ++r.violations;
        inside = who;
      } else if (line.rfind("leave ", 0) == 0) {
        std::string who = line.substr(6);
        if (inside != who) ++r.violations;
        inside.clear();
      }
    }
    return r;
  }

 private:
  void write_line(std::string_view verb, std::string_view who) {
    std::string line;
    line.reserve(verb.size() + who.size() + 1);
    line.append(verb).append(who).push_back('\n');
    if (::write(fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
      throw std::runtime_error("short write to " + path_);
  }
  std::string path_;
  int fd_ = -1;
};

}  // namespace zklock::test
