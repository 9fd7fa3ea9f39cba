#include "net/pcap_writer.hpp"

#include <pcap/pcap.h>
#include <stdio_ext.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <system_error>

namespace rdmasim::net {

namespace {
std::string errno_text(int err) {
    return std::generic_category().message(err);
}
} // namespace

Result<std::unique_ptr<PcapWriter>> PcapWriter::open(const std::string& path,
                                                     std::uint32_t snaplen) {
    const std::string what = "pcap writer " + path;
    if (snaplen == 0) return make_error(EINVAL, what + ": snaplen must be positive");

    std::unique_ptr<PcapWriter> w(new PcapWriter());
    w->path_ = path;
    w->dead_ = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, static_cast<int>(snaplen),
                                                    PCAP_TSTAMP_PRECISION_NANO);
    if (!w->dead_) return make_error(ENOMEM, what + ": pcap_open_dead failed");
    errno = 0;
    w->dumper_ = pcap_dump_open(w->dead_, path.c_str());
    if (!w->dumper_) {
        const int err = errno != 0 ? errno : EIO;
        return make_error(err, what + ": " + pcap_geterr(w->dead_));
    }
    return w;
}

PcapWriter::~PcapWriter() {
    (void)close();
}

void PcapWriter::write(std::span<const std::uint8_t> bytes, std::uint64_t ts_ns) noexcept {
    if (!dumper_) return;
    pcap_pkthdr hdr{};
    hdr.ts.tv_sec = static_cast<time_t>(ts_ns / 1'000'000'000u);
    hdr.ts.tv_usec = static_cast<suseconds_t>(ts_ns % 1'000'000'000u); // ns: nano dumper
    hdr.len = static_cast<bpf_u_int32>(bytes.size());
    // The file header promises snaplen: a longer frame keeps its wire length but is cut.
    hdr.caplen = std::min<bpf_u_int32>(hdr.len, static_cast<bpf_u_int32>(pcap_snapshot(dead_)));
    pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, bytes.data());
    ++frames_;
}

void PcapWriter::abandon_after_fork() noexcept {
    if (dumper_) {
        std::FILE* f = pcap_dump_file(dumper_);
        if (fileno(f) != STDOUT_FILENO) { // pcap_dump_open's "-": the program's, and left to it
            __fpurge(f);
            pcap_dump_close(dumper_);
        }
        dumper_ = nullptr;
    }
    if (dead_) {
        pcap_close(dead_);
        dead_ = nullptr;
    }
}

Result<void> PcapWriter::close() {
    Result<void> result;
    if (dumper_) {
        errno = 0;
        const bool flush_failed = pcap_dump_flush(dumper_) != 0;
        const int flush_errno = errno;
        const bool stream_error = std::ferror(pcap_dump_file(dumper_)) != 0;
        pcap_dump_close(dumper_);
        dumper_ = nullptr;
        if (flush_failed || stream_error) {
            const int err = flush_errno != 0 ? flush_errno : EIO;
            result = make_error(err, "pcap writer " + path_ + ": write failed: " + errno_text(err));
        }
    }
    if (dead_) {
        pcap_close(dead_);
        dead_ = nullptr;
    }
    return result;
}

} // namespace rdmasim::net
