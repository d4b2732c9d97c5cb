//===- OutputFile.cpp - Writing a command's output files --------*- C++ -*-===//
//
// Part of the kopt project, under the Apache License v2.0 with LLVM Exceptions.
// See LICENSE for license information.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "kopt/Runtime/OutputFile.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <streambuf>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace kopt::runtime;

static Status ioError(const std::string &path, const std::string &why) {
  return Status::error(StatusCode::IoError,
                       (path == "-" ? "cannot write to standard output"
                                    : "cannot write '" + path + "'") +
                           ": " + why);
}

static Status ioError(const std::string &path, int code) {
  return ioError(path, std::strerror(code));
}

//===----------------------------------------------------------------------===//
// ProtectedFiles
//===----------------------------------------------------------------------===//

void ProtectedFiles::addInput(const std::string &path) {
  if (!path.empty() && path != "-")
    entries.push_back({path, "an input"});
}

void ProtectedFiles::addDatabase(const std::string &path) {
  if (path.empty())
    return;
  for (const char *suffix : {"", "-wal", "-shm", "-journal"})
    entries.push_back({path + suffix, "the kernel database"});
}

/// `path` with its directory resolved, for files that do not exist yet.
static std::string canonicalName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  std::string directory = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  char resolved[PATH_MAX];
  if (!::realpath(directory.c_str(), resolved))
    return "";
  return std::string(resolved) + "/" + path.substr(slash + 1);
}

Status ProtectedFiles::check(const std::string &output) const {
  auto refuse = [&](const Entry &entry) {
    return Status::error(StatusCode::InvalidArgument,
                         "refusing to write '" + output +
                             "': it is the same file as " + entry.role + " '" +
                             entry.path + "'");
  };
  struct stat out;
  int rc = output == "-" ? ::fstat(STDOUT_FILENO, &out)
                         : ::stat(output.c_str(), &out);
  if (rc != 0) {
    // Neither exists yet (a database the command is about to create): the
    // same name is the same file.
    std::string name = output == "-" ? "" : canonicalName(output);
    struct stat in;
    for (const Entry &entry : entries)
      if (!name.empty() && ::stat(entry.path.c_str(), &in) != 0 &&
          canonicalName(entry.path) == name)
        return refuse(entry);
    return Status::success();
  }
  // Only a regular file can be overwritten; /dev/null may be every input.
  if (!S_ISREG(out.st_mode))
    return Status::success();
  for (const Entry &entry : entries) {
    struct stat in;
    if (::stat(entry.path.c_str(), &in) == 0 && in.st_dev == out.st_dev &&
        in.st_ino == out.st_ino)
      return refuse(entry);
  }
  return Status::success();
}

//===----------------------------------------------------------------------===//
// OutputFile
//===----------------------------------------------------------------------===//

namespace {
/// How the output reaches its path.
enum class Mode {
  /// A temporary file renamed over the target (a regular or missing file).
  Replace,
  /// The target itself (a character device or a FIFO).
  InPlace,
  /// Standard output, never closed.
  Stdout,
};

class OutputBuffer;
} // namespace

struct OutputFile::Impl {
  std::string path;
  /// The file the temporary is renamed over (symbolic links resolved).
  std::string target;
  std::string temporary;
  Mode mode = Mode::Replace;
  int fd = -1;
  /// The errno of the first failed write, kept for `commit`.
  int writeErrno = 0;
  bool done = false;
  std::unique_ptr<OutputBuffer> buffer;
  std::unique_ptr<std::ostream> os;

  ~Impl();
  Status writeRaw(const char *data, size_t size);
  Status flushStream();
  /// Closes and removes what was written, unless committed.
  void discard();
};

namespace {
/// A stream buffer that hands full buffers to OutputFile::Impl::writeRaw.
class OutputBuffer final : public std::streambuf {
public:
  explicit OutputBuffer(OutputFile::Impl &file) : file(file) {
    setp(data, data + sizeof(data));
  }
  /// Writes what is buffered; false on a write error.
  bool drain() {
    std::ptrdiff_t size = pptr() - pbase();
    setp(data, data + sizeof(data));
    return size == 0 || file.writeRaw(data, size_t(size)).isOk();
  }

protected:
  int sync() override { return drain() ? 0 : -1; }
  int_type overflow(int_type c) override {
    if (!drain())
      return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }

private:
  OutputFile::Impl &file;
  char data[1 << 16];
};
} // namespace

OutputFile::Impl::~Impl() { discard(); }

Status OutputFile::Impl::writeRaw(const char *data, size_t size) {
  while (size && !writeErrno) {
    ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      writeErrno = written < 0 ? errno : EIO;
      break;
    }
    data += written;
    size -= size_t(written);
  }
  return writeErrno ? ioError(path, writeErrno) : Status::success();
}

Status OutputFile::Impl::flushStream() {
  if (buffer && !buffer->drain())
    return ioError(path, writeErrno ? writeErrno : EIO);
  return Status::success();
}

void OutputFile::Impl::discard() {
  if (done)
    return;
  done = true;
  if (mode != Mode::Stdout && fd >= 0)
    ::close(fd);
  fd = -1;
  if (mode == Mode::Replace && !temporary.empty())
    ::unlink(temporary.c_str());
}

/// `path` without its last component ("." when there is none).
static std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

/// Creates a new temporary file beside `target`, readable as the umask
/// allows, and stores its name in `impl`.
static Status createTemporary(OutputFile::Impl &impl) {
  static std::atomic<unsigned> counter{0};
  std::string directory = directoryOf(impl.target);
  std::string base = impl.target.substr(impl.target.find_last_of('/') + 1);
  // Short enough that a 255-byte file name still gives a valid one.
  base = base.substr(0, 64);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = directory + "/." + base + ".kopt-" +
                       std::to_string(::getpid()) + "-" +
                       std::to_string(counter++) + ".tmp";
    int fd =
        ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      impl.fd = fd;
      impl.temporary = name;
      return Status::success();
    }
    if (errno != EEXIST)
      return ioError(impl.path, errno);
  }
  return ioError(impl.path,
                 "cannot create a temporary file in '" + directory + "'");
}

/// Decides how `impl.path` is written and opens it.
static Status openTarget(OutputFile::Impl &impl) {
  if (impl.path == "-") {
    impl.mode = Mode::Stdout;
    impl.fd = STDOUT_FILENO;
    return Status::success();
  }
  impl.target = impl.path;
  struct stat st;
  if (::lstat(impl.path.c_str(), &st) != 0) {
    if (errno != ENOENT)
      return ioError(impl.path, errno);
    return createTemporary(impl);
  }
  if (S_ISLNK(st.st_mode)) {
    // Written through: the link's target is replaced, the link stays.
    char resolved[PATH_MAX];
    if (!::realpath(impl.path.c_str(), resolved))
      return ioError(
          impl.path,
          errno == ENOENT
              ? std::string("it is a symbolic link to a missing file")
              : std::string(std::strerror(errno)));
    impl.target = resolved;
    if (::stat(resolved, &st) != 0)
      return ioError(impl.path, errno);
  }
  if (S_ISDIR(st.st_mode))
    return ioError(impl.path, "it is a directory");
  if (S_ISREG(st.st_mode)) {
    if (Status status = createTemporary(impl); !status.isOk())
      return status;
    // The new file keeps the permissions of the one it replaces.
    ::fchmod(impl.fd, st.st_mode & 07777);
    return Status::success();
  }
  if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
    return ioError(impl.path,
                   "it is not a regular file, a character device or a FIFO");
  // A device or a pipe is written as it is and never replaced.
  impl.mode = Mode::InPlace;
  impl.fd = ::open(impl.target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (impl.fd < 0)
    return ioError(impl.path, errno);
  return Status::success();
}

OutputFile::OutputFile(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}

OutputFile::~OutputFile() = default;

Result<std::unique_ptr<OutputFile>>
OutputFile::open(const std::string &path, const ProtectedFiles &protect) {
  if (path.empty())
    return Status::error(StatusCode::InvalidArgument,
                         "an output path may not be empty");
  if (Status status = protect.check(path); !status.isOk())
    return status;
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  if (Status status = openTarget(*impl); !status.isOk())
    return status;
  return std::unique_ptr<OutputFile>(new OutputFile(std::move(impl)));
}

Status OutputFile::write(std::string_view bytes) {
  if (impl->done)
    return ioError(impl->path, "the file is already closed");
  if (Status status = impl->flushStream(); !status.isOk())
    return status;
  return impl->writeRaw(bytes.data(), bytes.size());
}

std::ostream &OutputFile::stream() {
  if (!impl->os) {
    impl->buffer = std::make_unique<OutputBuffer>(*impl);
    impl->os = std::make_unique<std::ostream>(impl->buffer.get());
  }
  return *impl->os;
}

Status OutputFile::getWriteStatus() const {
  return impl->writeErrno ? ioError(impl->path, impl->writeErrno)
                          : Status::success();
}

const std::string &OutputFile::getPath() const { return impl->path; }

Status OutputFile::commit() {
  Impl &file = *impl;
  if (file.done)
    return ioError(file.path, "the file is already closed");
  Status status = file.flushStream();
  if (status.isOk() && file.writeErrno)
    status = ioError(file.path, file.writeErrno);
  if (!status.isOk()) {
    file.discard();
    return status;
  }
  if (file.mode == Mode::Stdout) {
    file.done = true;
    return Status::success();
  }
  // A full disk may only show at sync or close.
  if (file.mode == Mode::Replace && ::fsync(file.fd) != 0) {
    int code = errno;
    file.discard();
    return ioError(file.path, code);
  }
  int fd = file.fd;
  file.fd = -1;
  if (::close(fd) != 0) {
    int code = errno;
    file.discard();
    return ioError(file.path, code);
  }
  if (file.mode == Mode::Replace &&
      ::rename(file.temporary.c_str(), file.target.c_str()) != 0) {
    int code = errno;
    file.discard();
    return ioError(file.path, std::string("cannot rename the temporary file "
                                          "over it: ") +
                                  std::strerror(code));
  }
  file.done = true;
  return Status::success();
}

Status kopt::runtime::writeOutputFile(const std::string &path,
                                      std::string_view bytes,
                                      const ProtectedFiles &protect) {
  auto file = OutputFile::open(path, protect);
  if (!file)
    return file.status();
  if (Status status = (*file)->write(bytes); !status.isOk())
    return status;
  return (*file)->commit();
}
