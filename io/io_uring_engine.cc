#include <liburing.h>
#include <unistd.h>

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

// The user data of a no-op entry, which stands for no op.
constexpr uint64_t kNoOp = UINT64_MAX;

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
    // A forked process shares the parent's ring memory: it closes its copies
    // of the parent's rings (the parent keeps them) and makes its own.
    if (getpid() != pid_) {
      idle_.clear();
      live_ = 0;
      at_limit_ = false;
      pid_ = getpid();
    }
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
      returned_.wait(lock, [&] { return !idle_.empty() || live_ == 0 || !at_limit_; });
    }
  }

  void Give(std::unique_ptr<Ring> ring) {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(ring));
    returned_.notify_one();
  }

  // A failed ring is closed; the next caller without one may create another.
  void Drop(std::unique_ptr<Ring> ring) {
    ring.reset();
    std::lock_guard lock(mu_);
    --live_;
    at_limit_ = false;
    returned_.notify_all();
  }

  // Performs every op on `ring`; false when the ring itself failed (every
  // unfinished op then has the error) and must not be used again.
  bool Run(io_uring* ring, std::span<IoOp> ops) {
    std::vector<uint64_t> done(ops.size(), 0);
    std::vector<bool> finished(ops.size(), false);
    std::deque<size_t> pending;
    for (size_t i = 0; i < ops.size(); ++i) pending.push_back(i);
    unsigned queued = 0;     // prepared, not yet taken by the kernel
    unsigned submitted = 0;  // taken by the kernel, not yet reaped
    // Counts what a submit call took; false when the ring itself failed.
    auto took = [&](int r) {
      if (r >= 0) {
        queued -= static_cast<unsigned>(r);
        submitted += static_cast<unsigned>(r);
        return true;
      }
      return r == -EINTR || r == -EAGAIN || r == -EBUSY;
    };
    while (!pending.empty() || queued + submitted > 0) {
      while (!pending.empty() && queued + submitted < options_.queue_depth) {
        io_uring_sqe* sqe = io_uring_get_sqe(ring);
        if (sqe == nullptr) break;
        const size_t i = pending.front();
        pending.pop_front();
        const uint64_t want = CallLength(ops[i], done[i]);
        if (!Throttle(want)) {
          // Cancelled: this entry becomes a no-op, and no op not yet taken
          // by the kernel goes out; those in flight are waited for.
          io_uring_prep_nop(sqe);
          io_uring_sqe_set_data64(sqe, kNoOp);
          ++queued;
          pending.push_front(i);
          for (const size_t j : pending) {
            if (ops[j].status->ok()) *ops[j].status = CancelledRead(ops[j]);
            finished[j] = true;
          }
          pending.clear();
          break;
        }
        io_uring_prep_read(sqe, ops[i].file->fd(), ops[i].out + done[i], static_cast<unsigned>(want),
                           ops[i].offset + done[i]);
        io_uring_sqe_set_data64(sqe, i);
        ++queued;
        // Under a bandwidth cap each entry goes out as soon as its budget
        // allows, so waiting for budget overlaps the reads already issued.
        if (options_.max_mbps > 0) {
          const int r = io_uring_submit(ring);
          if (!took(r)) return FailAll(ring, ops, finished, submitted, r);
        }
      }
      const int r = io_uring_submit_and_wait(ring, 1);
      if (!took(r)) return FailAll(ring, ops, finished, submitted, r);
      io_uring_cqe* cqe = nullptr;
      unsigned head = 0;
      unsigned seen = 0;
      io_uring_for_each_cqe(ring, head, cqe) {
        ++seen;
        --submitted;
        if (io_uring_cqe_get_data64(cqe) == kNoOp) continue;
        const size_t i = static_cast<size_t>(io_uring_cqe_get_data64(cqe));
        const int res = cqe->res;
        if (res == -EAGAIN || res == -EINTR || (res >= 0 && InjectEagain())) {
          pending.push_back(i);
          continue;
        }
        if (Advance(ops[i], &done[i], res)) {
          finished[i] = true;
        } else {
          pending.push_back(i);
        }
      }
      io_uring_cq_advance(ring, seen);
    }
    return true;
  }

  // The ring itself failed: every unfinished op gets the error, and every
  // read the kernel took is waited for, so that none lands in a caller's
  // buffer after Read() returns. Entries it never took go with the ring.
  // Returns false: the ring must not be used again.
  static bool FailAll(io_uring* ring, std::span<IoOp> ops, const std::vector<bool>& finished, unsigned submitted,
                      int err) {
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!finished[i] && ops[i].status->ok()) {
        *ops[i].status = Status::IOError(ops[i].file->path() + ": io_uring submit failed: " + std::strerror(-err));
      }
    }
    io_uring_cqe* cqe = nullptr;
    while (submitted > 0 && io_uring_wait_cqe(ring, &cqe) == 0) {
      io_uring_cqe_seen(ring, cqe);
      --submitted;
    }
    return false;
  }

  std::mutex mu_;
  std::condition_variable returned_;
  std::vector<std::unique_ptr<Ring>> idle_;  // guarded by mu_
  pid_t pid_ = getpid();                     // the process the rings belong to; guarded by mu_
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
