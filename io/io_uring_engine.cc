#include <liburing.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "io/io_engine_internal.h"

namespace pcr {

namespace {

// Fills min(pending, free SQEs, depth - in flight) entries, submits and waits
// once, reaps every completion, and requeues short reads and EAGAIN.
class UringEngine final : public IoEngine {
 public:
  UringEngine(const IoEngineOptions& options, const IoFaults& faults, io_uring ring)
      : IoEngine(options, faults), ring_(ring) {}
  ~UringEngine() override {
    if (!broken_) io_uring_queue_exit(&ring_);
  }
  std::string_view name() const override { return "uring"; }

 protected:
  void DoRead(std::span<IoOp> ops) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_) {
      for (IoOp& op : ops) *op.status = Status::IOError(op.file->path() + ": io_uring ring unavailable");
      return;
    }
    std::vector<uint64_t> done(ops.size(), 0);
    std::deque<size_t> pending;
    for (size_t i = 0; i < ops.size(); ++i) pending.push_back(i);
    unsigned inflight = 0;
    while (!pending.empty() || inflight > 0) {
      while (!pending.empty() && inflight < options_.queue_depth) {
        io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
        if (sqe == nullptr) break;
        const size_t i = pending.front();
        pending.pop_front();
        const uint64_t want = CallLength(ops[i], done[i]);
        Throttle(want);
        io_uring_prep_read(sqe, ops[i].file->fd(), ops[i].out + done[i], static_cast<unsigned>(want),
                           ops[i].offset + done[i]);
        io_uring_sqe_set_data64(sqe, i);
        ++inflight;
        // Under a bandwidth cap each entry goes out as soon as its budget
        // allows, so waiting for budget overlaps the reads already issued.
        if (options_.max_mbps > 0) io_uring_submit(&ring_);
      }
      const int submitted = io_uring_submit_and_wait(&ring_, 1);
      if (submitted < 0 && submitted != -EINTR && submitted != -EAGAIN && submitted != -EBUSY) {
        FailAll(ops, inflight, submitted);
        return;
      }
      io_uring_cqe* cqe = nullptr;
      unsigned head = 0;
      unsigned seen = 0;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        ++seen;
        --inflight;
        const size_t i = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
        const int res = cqe->res;
        if (res == -EAGAIN || res == -EINTR || (res >= 0 && InjectEagain())) {
          pending.push_back(i);
          continue;
        }
        if (!Advance(ops[i], &done[i], res)) pending.push_back(i);
      }
      io_uring_cq_advance(&ring_, seen);
    }
  }

 private:
  // The ring itself failed: every unfinished op gets the error, completions
  // still due are reaped (bounded wait) so none lands in a caller's buffer
  // after Read() returns, and a fresh ring replaces this one so that entries
  // never submitted are dropped.
  void FailAll(std::span<IoOp> ops, unsigned inflight, int err) {
    for (IoOp& op : ops) {
      if (op.status->ok()) {
        *op.status = Status::IOError(op.file->path() + ": io_uring submit failed: " + std::strerror(-err));
      }
    }
    __kernel_timespec timeout{.tv_sec = 1, .tv_nsec = 0};
    io_uring_cqe* cqe = nullptr;
    while (inflight > 0 && io_uring_wait_cqe_timeout(&ring_, &cqe, &timeout) == 0) {
      io_uring_cqe_seen(&ring_, cqe);
      --inflight;
    }
    io_uring_queue_exit(&ring_);
    if (io_uring_queue_init(options_.queue_depth, &ring_, 0) < 0) broken_ = true;
  }

  std::mutex mu_;
  io_uring ring_;
  bool broken_ = false;  // no ring could be recreated after a failure
};

}  // namespace

std::unique_ptr<IoEngine> MakeUringEngine(const IoEngineOptions& options, const IoFaults& faults, std::string* why) {
  io_uring ring;
  const int r = faults.refuse_uring ? -EPERM : io_uring_queue_init(options.queue_depth, &ring, 0);
  if (r < 0) {
    *why = std::strerror(-r);
    return nullptr;
  }
  return std::make_unique<UringEngine>(options, faults, ring);
}

}  // namespace pcr
