#include <liburing.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "io/io_engine_internal.h"

namespace pcr {

namespace {

// One io_uring instance, used by one read call at a time.
struct Ring {
  io_uring ring{};
  explicit Ring(const io_uring& r) : ring(r) {}
  ~Ring() { io_uring_queue_exit(&ring); }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;
};

// Each read call takes a ring of its own from a pool that grows to the
// number of concurrent callers, so threads reading one engine never wait
// for each other. On a ring it fills min(pending, free SQEs, depth - in
// flight) entries, submits and waits once, reaps every completion, and
// requeues short reads and EAGAIN.
class UringEngine final : public IoEngine {
 public:
  UringEngine(const IoEngineOptions& options, const IoFaults& faults, const io_uring& first)
      : IoEngine(options, faults), live_(1) {
    idle_.push_back(std::make_unique<Ring>(first));
  }
  std::string_view name() const override { return "uring"; }

 protected:
  void DoRead(std::span<IoOp> ops) override {
    std::unique_ptr<Ring> ring = Take();
    if (!ring) {
      for (IoOp& op : ops) *op.status = Status::IOError(op.file->path() + ": io_uring ring unavailable");
      return;
    }
    if (faults_.in_read) faults_.in_read();
    if (Run(&ring->ring, ops)) {
      Give(std::move(ring));
    } else {
      Drop(std::move(ring));
    }
  }

 private:
  // An idle ring, a new one, or (when no more can be made) the next ring
  // another caller gives back; nullptr when every ring has failed.
  std::unique_ptr<Ring> Take() {
    std::unique_lock lock(mu_);
    while (true) {
      if (!idle_.empty()) {
        std::unique_ptr<Ring> ring = std::move(idle_.back());
        idle_.pop_back();
        return ring;
      }
      if (!at_limit_) {
        io_uring r;
        if (io_uring_queue_init(options_.queue_depth, &r, 0) == 0) {
          ++live_;
          return std::make_unique<Ring>(r);
        }
        at_limit_ = true;
      }
      if (live_ == 0) return nullptr;
      returned_.wait(lock, [&] { return !idle_.empty() || live_ == 0; });
    }
  }

  void Give(std::unique_ptr<Ring> ring) {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(ring));
    returned_.notify_one();
  }

  void Drop(std::unique_ptr<Ring> ring) {
    ring.reset();
    std::lock_guard lock(mu_);
    --live_;
    returned_.notify_all();
  }

  // Performs every op on `ring`; false when the ring itself failed (every
  // unfinished op then has the error) and must not be used again.
  bool Run(io_uring* ring, std::span<IoOp> ops) {
    std::vector<uint64_t> done(ops.size(), 0);
    std::deque<size_t> pending;
    for (size_t i = 0; i < ops.size(); ++i) pending.push_back(i);
    unsigned inflight = 0;
    while (!pending.empty() || inflight > 0) {
      while (!pending.empty() && inflight < options_.queue_depth) {
        io_uring_sqe* sqe = io_uring_get_sqe(ring);
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
        if (options_.max_mbps > 0) io_uring_submit(ring);
      }
      const int submitted = io_uring_submit_and_wait(ring, 1);
      if (submitted < 0 && submitted != -EINTR && submitted != -EAGAIN && submitted != -EBUSY) {
        FailAll(ring, ops, inflight, submitted);
        return false;
      }
      io_uring_cqe* cqe = nullptr;
      unsigned head = 0;
      unsigned seen = 0;
      io_uring_for_each_cqe(ring, head, cqe) {
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
      io_uring_cq_advance(ring, seen);
    }
    return true;
  }

  // The ring itself failed: every unfinished op gets the error, and
  // completions still due are reaped (bounded wait) so none lands in a
  // caller's buffer after Read() returns. Entries never submitted are
  // dropped with the ring.
  static void FailAll(io_uring* ring, std::span<IoOp> ops, unsigned inflight, int err) {
    for (IoOp& op : ops) {
      if (op.status->ok()) {
        *op.status = Status::IOError(op.file->path() + ": io_uring submit failed: " + std::strerror(-err));
      }
    }
    __kernel_timespec timeout{.tv_sec = 1, .tv_nsec = 0};
    io_uring_cqe* cqe = nullptr;
    while (inflight > 0 && io_uring_wait_cqe_timeout(ring, &cqe, &timeout) == 0) {
      io_uring_cqe_seen(ring, cqe);
      --inflight;
    }
  }

  std::mutex mu_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<Ring>> idle_;  // guarded by mu_
  size_t live_;                              // rings in existence; guarded by mu_
  bool at_limit_ = false;                    // creating another ring failed; guarded by mu_
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
