#include "net/vde_wire.hpp"

#include <fcntl.h>
// <libvdeplug.h> declares C functions without extern "C" of its own.
extern "C" {
#include <libvdeplug.h>
#include <linux/sockios.h>
}
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "net/socket_dir.hpp"

namespace rdmasim::net {

static_assert(VdeWire::kMaxFrame == VDE_ETHBUFSIZE, "a wire frame is as long as libvdeplug's buffer");

namespace {

// The schemes a wire may use. libvdeplug loads a module per scheme and has
// others (tap://, cmd://, ...) that reach beyond a virtual Ethernet: refused.
enum class Scheme { ptp, vde, vxvde, other };

Scheme scheme_of(std::string_view url) {
    if (url.starts_with("ptp://")) return Scheme::ptp;
    if (url.starts_with("vde://")) return Scheme::vde;
    if (url.starts_with("vxvde://")) return Scheme::vxvde;
    return Scheme::other;
}

// What the user can do about an errno from vde_open.
std::string_view hint(Scheme scheme, int err) {
    switch (err) {
    case ENOENT:
        if (scheme == Scheme::vde) return " (no vde_switch there: start one with vde_switch -s PATH)";
        if (scheme == Scheme::ptp) return " (the socket's directory does not exist)";
        return "";
    case EADDRINUSE:
        if (scheme == Scheme::ptp) return " (both ends of this point-to-point wire are plugged in already)";
        return "";
    case EACCES:
        return " (no permission on the socket or its directory)";
    case EPROTONOSUPPORT:
        return " (libvdeplug has no module for this scheme)";
    default:
        return "";
    }
}

std::uint64_t realtime_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// open()'s steps.

// The URL's form and the socket mode, and for ptp:// the path's length and
// its directory, before anything is created.
Result<void> check_url(const std::string& url, Scheme scheme, const VdeWireOptions& options,
                       const std::string& path) {
    if (scheme == Scheme::other)
        return make_error(EINVAL, fmt::format("wire '{}': expected ptp://PATH, vde://PATH or vxvde://GROUP", url));
    if (scheme != Scheme::vxvde && url.size() == url.find("://") + 3)
        return make_error(EINVAL, fmt::format("wire '{}': the URL names no socket path", url));
    if ((options.mode & ~0777u) != 0 || (options.mode & 0600u) != 0600u)
        return make_error(EINVAL, fmt::format("wire '{}': socket mode {:04o}: expected owner read and write, "
                                              "like 0600 or 0660", url, options.mode));
    if (scheme != Scheme::ptp) return {};
    if (path.size() > VdeWire::kMaxPtpPath)
        return make_error(EINVAL, fmt::format("wire '{}': a ptp:// socket path of {} bytes: at most {} (a unix "
                                              "socket's name holds 107, and the peer's is one longer)",
                                              url, path.size(), VdeWire::kMaxPtpPath));
    // Whoever may write the directory may take the peer's socket name first.
    if (auto r = check_socket_directory(socket_directory(path)); !r)
        return make_error(r.error().code, fmt::format("wire '{}': {}{}", url, r.error().message,
                                                      hint(scheme, r.error().code)));
    return {};
}

// Neither the engine (recv) nor the port lock (send) may wait on a peer:
// the modules pass no MSG_DONTWAIT, so the descriptor itself is made
// non-blocking. A full peer queue then fails the send with EAGAIN, and the
// frame waits in the backlog.
Result<void> make_nonblocking(int data_fd, const std::string& url) {
    const int fl = data_fd < 0 ? -1 : ::fcntl(data_fd, F_GETFL);
    if (fl >= 0 && ::fcntl(data_fd, F_SETFL, fl | O_NONBLOCK) >= 0) return {};
    const int err = data_fd < 0 ? EBADF : errno;
    return make_error(err, fmt::format("wire '{}': cannot make its data socket non-blocking: {}", url,
                                       std::strerror(err)));
}

// The path the data socket is bound to.
Result<std::string> own_socket_path(int data_fd, const std::string& url) {
    sockaddr_un own{};
    socklen_t len = sizeof own;
    if (::getsockname(data_fd, reinterpret_cast<sockaddr*>(&own), &len) != 0 ||
        len <= offsetof(sockaddr_un, sun_path)) {
        const int err = errno != 0 ? errno : EIO;
        return make_error(err, fmt::format("wire '{}': cannot read its socket's name: {}", url,
                                           std::strerror(err)));
    }
    return std::string(own.sun_path, ::strnlen(own.sun_path, len - offsetof(sockaddr_un, sun_path)));
}

} // namespace

Result<std::unique_ptr<VdeWire>> VdeWire::open(const std::string& url, const VdeWireOptions& options) {
    const Scheme scheme = scheme_of(url);
    const std::string path = scheme == Scheme::ptp ? url.substr(6) : std::string();
    if (auto r = check_url(url, scheme, options, path); !r) return r.error();

    std::unique_ptr<VdeWire> wire(new VdeWire);
    wire->url_ = url;
    wire->hangup_ = fmt::format("wire '{}': the vde_switch closed the connection", url);
    wire->buf_.resize(kMaxFrame + 1);
    // libvdeplug takes writable strings; the modules read them only.
    std::string url_arg = url;
    char descr[] = "rdmasim";
    vde_open_args args{};
    args.mode = static_cast<mode_t>(options.mode); // ptp and vde chmod their socket to this
    errno = 0;
    wire->conn_ = vde_open(url_arg.data(), descr, &args);
    if (wire->conn_ == nullptr) {
        const int err = errno != 0 ? errno : EIO;
        return make_error(err, fmt::format("wire '{}': libvdeplug cannot open it: {}{}", url,
                                           std::strerror(err), hint(scheme, err)));
    }
    wire->data_fd_ = vde_datafd(wire->conn_);
    wire->ctl_fd_ = vde_ctlfd(wire->conn_);
    if (auto r = make_nonblocking(wire->data_fd_, url); !r) return r.error();
    wire->poll_first_ = scheme == Scheme::vxvde;
    if (scheme == Scheme::ptp) {
        // libvdeplug pairs the ends by name: the end that created PATH talks
        // to PATH+, the other (bound to PATH+) to PATH.
        const auto own_path = own_socket_path(wire->data_fd_, url);
        if (!own_path) return own_path.error();
        wire->ptp_ = true;
        wire->rx_ = std::make_unique<RecvBatch>(kMaxFrame);
        wire->tx_ = std::make_unique<SendBatch>(kMaxFrame);
        wire->peer_path_ = own_path.value() == path ? path + "+" : path;
        wire->connected_to_peer_ = own_path.value() != path; // the second end connected at open
    }
    return wire;
}

VdeWire::~VdeWire() {
    if (conn_ != nullptr) vde_close(conn_); // a ptp end removes its socket file
}

std::string VdeWire::describe() const { return fmt::format("wire {} (libvdeplug, no FCS)", url_); }

bool VdeWire::from_peer(const sockaddr_un& from, socklen_t len) noexcept {
    const auto base = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path));
    if (len <= base || from.sun_path[0] == '\0') return false; // unnamed or abstract: never the peer
    if (len == accepted_len_ && std::memcmp(&from, &accepted_, len) == 0) return true;
    // A new name: the peer's socket file under another spelling, or someone else.
    const std::string name(from.sun_path, ::strnlen(from.sun_path, len - base));
    struct stat sender{}, peer{};
    if (::stat(name.c_str(), &sender) != 0 || ::stat(peer_path_.c_str(), &peer) != 0) return false;
    if (!S_ISSOCK(sender.st_mode) || sender.st_dev != peer.st_dev || sender.st_ino != peer.st_ino) return false;
    accepted_ = from;
    accepted_len_ = len;
    if (!connected_to_peer_) {
        // From now on the kernel refuses other senders (EPERM to them), so
        // strangers cannot fill our queue either. libvdeplug connects the
        // same way at the first send; a failure here changes nothing.
        connected_to_peer_ = true;
        (void)::connect(data_fd_, reinterpret_cast<const sockaddr*>(&from), len);
    }
    return true;
}

bool VdeWire::next(Frame& out) noexcept {
    if (hung_up_.load(std::memory_order_relaxed)) return false;
    if (ptp_) return next_burst({&out, 1}) == 1;
    // Ignored (empty) datagrams do not end the call: the next one is read,
    // at most kMaxIgnored of them.
    constexpr int kMaxIgnored = 64;
    ssize_t n = -1;
    for (int ignored = 0;; ++ignored) {
        if (ignored == kMaxIgnored) return false; // the rest on the next call
        pollfd p{data_fd_, POLLIN, 0};
        if (poll_first_ && ::poll(&p, 1, 0) == 0) {
            errno = EAGAIN; // nothing to read: vde_recv would block the engine
            break;
        }
        n = vde_recv(conn_, buf_.data(), buf_.size(), 0);
        if (n != 0) [[likely]] break;
        wire_.rx_empty.fetch_add(1, std::memory_order_relaxed);
    }
    if (n < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            wire_.rx_errors.fetch_add(1, std::memory_order_relaxed);
        else
            check_hangup();
        return false;
    }
    hand_over(out, buf_.data(), static_cast<std::size_t>(n), realtime_ns());
    return true;
}

std::uint32_t VdeWire::next_burst(std::span<Frame> out) noexcept {
    if (!ptp_ || out.empty()) return FrameSource::next_burst(out);
    // A batch of ignored datagrams (empty, a stranger's) is followed by one
    // more read, no more: the rest on the next call.
    std::uint32_t k = 0;
    for (int round = 0; round < 2 && k == 0; ++round) {
        const int n = rx_->read(data_fd_, out.size());
        if (n < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                wire_.rx_errors.fetch_add(1, std::memory_order_relaxed);
            return k;
        }
        const std::uint64_t ts = realtime_ns();
        for (int i = 0; i < n; ++i) {
            if (!from_peer(rx_->sender(i), rx_->sender_len(i))) [[unlikely]] {
                wire_.rx_strangers.fetch_add(1, std::memory_order_relaxed);
            } else if (rx_->length(i) == 0) [[unlikely]] {
                wire_.rx_empty.fetch_add(1, std::memory_order_relaxed);
            } else {
                hand_over(out[k++], rx_->data(i), rx_->length(i), ts);
            }
        }
        if (static_cast<std::size_t>(n) < out.size()) break; // read empty
    }
    return k;
}

void VdeWire::hand_over(Frame& out, std::uint8_t* data, std::size_t got,
                        std::uint64_t ts_ns) noexcept {
    // Every datagram is a frame for the port to judge: a runt (libvdeplug's
    // one-byte "drop this" included) is counted there as runt_frames. The
    // wire carries no FCS. A datagram longer than kMaxFrame was cut by the
    // kernel: it goes over marked truncated (wire_len past what was kept)
    // and the port drops it.
    out = Frame{};
    out.data = data;
    out.len = static_cast<std::uint32_t>(std::min<std::size_t>(got, kMaxFrame));
    out.wire_len = static_cast<std::uint32_t>(std::min<std::size_t>(got, kMaxFrame + 1));
    out.fcs_len = 0;
    out.ts_ns = ts_ns;
    if (out.truncated()) ++counters_.truncated_records;
    ++counters_.frames;
    counters_.bytes += out.len;
}

void VdeWire::check_hangup() noexcept {
    // The control connection of a vde_switch is silent after the handshake:
    // readable means the switch closed it.
    if (ctl_fd_ < 0) return;
    pollfd p{ctl_fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return;
    char c = 0;
    const ssize_t r = ::recv(ctl_fd_, &c, 1, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
        hung_up_.store(true, std::memory_order_release);
}

void VdeWire::send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept {
    // Behind frames already waiting, never past them: a link keeps its order.
    // A long run of sends behind a backlog (a READ's responses, built in one
    // go) offers it to the wire every kRetryEvery frames: the peer keeps
    // receiving meanwhile (a syscall per retry, not per frame).
    if (!backlog_.empty() && ++behind_ % kRetryEvery == 0) (void)flush();
    if (!backlog_.empty()) {
        (void)backlog_.push(frame, ts_ns); // a full backlog counts the loss (overflow)
        return;
    }
    if (tx_ && connected_to_peer_ && frame.size() <= tx_->slot_bytes()) [[likely]] {
        tx_->add(frame, ts_ns);
        if (tx_->full()) send_staged();
        return;
    }
    if (tx_ && !tx_->empty()) send_staged(); // a frame too long to stage: after those
    if (backlog_.empty() && try_send(frame)) return;
    (void)backlog_.push(frame, ts_ns);
}

void VdeWire::send_staged() noexcept {
    while (!tx_->empty()) {
        const SendBatch::Sent went = tx_->send(data_fd_);
        wire_.tx_frames.fetch_add(went.frames, std::memory_order_relaxed);
        wire_.tx_bytes.fetch_add(went.bytes, std::memory_order_relaxed);
        if (tx_->empty()) return;
        const int err = errno;
        if (err == EAGAIN || err == EWOULDBLOCK ||
            err == ENOBUFS) { // paused: the rest wait, in order
            for (; !tx_->empty(); tx_->pop())
                (void)backlog_.push(tx_->front(), tx_->front_ts());
            return;
        }
        wire_.tx_failures.fetch_add(1, std::memory_order_relaxed); // lost for good, as in try_send
        wire_.tx_last_errno.store(err, std::memory_order_relaxed);
        tx_->pop();
    }
}

bool VdeWire::unread() const noexcept {
    if (!backlog_.empty() || (tx_ && !tx_->empty())) return true;
    int queued = 0;
    return data_fd_ >= 0 && ::ioctl(data_fd_, SIOCOUTQ, &queued) == 0 && queued > 0;
}

std::size_t VdeWire::flush() noexcept {
    if (tx_ && !tx_->empty()) send_staged();
    if (tx_ && connected_to_peer_) // a batch a system call, as the stage
        return backlog_.flush_batches(
            [this](std::span<const std::span<const std::uint8_t>> frames) {
                return send_batch(frames);
            });
    return backlog_.flush([this](std::span<const std::uint8_t> f, std::uint64_t) { return try_send(f); });
}

std::size_t VdeWire::send_batch(std::span<const std::span<const std::uint8_t>> frames) noexcept {
    std::size_t done = 0; // sent, or lost for good
    while (done < frames.size()) {
        const SendBatch::Sent went = tx_->send_in_place(data_fd_, frames.subspan(done));
        wire_.tx_frames.fetch_add(went.frames, std::memory_order_relaxed);
        wire_.tx_bytes.fetch_add(went.bytes, std::memory_order_relaxed);
        done += went.frames;
        if (done == frames.size()) break;
        const int err = errno;
        if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) break; // paused: the rest wait
        wire_.tx_failures.fetch_add(1, std::memory_order_relaxed);        // lost, as in try_send
        wire_.tx_last_errno.store(err, std::memory_order_relaxed);
        ++done;
    }
    return done;
}

bool VdeWire::try_send(std::span<const std::uint8_t> frame) noexcept {
    const ssize_t n = vde_send(conn_, frame.data(), frame.size(), 0);
    if (n == static_cast<ssize_t>(frame.size())) [[likely]] {
        wire_.tx_frames.fetch_add(1, std::memory_order_relaxed);
        wire_.tx_bytes.fetch_add(frame.size(), std::memory_order_relaxed);
        return true;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) return false; // paused
    wire_.tx_failures.fetch_add(1, std::memory_order_relaxed);
    wire_.tx_last_errno.store(n < 0 ? errno : EMSGSIZE, std::memory_order_relaxed);
    return true;
}

} // namespace rdmasim::net
