#include "server/decode_ahead.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace admitd {

DecodeAhead::DecodeAhead(size_t batch, size_t batches_ahead)
    : batch_(std::max<size_t>(batch, 1)), batches_ahead_(std::max<size_t>(batches_ahead, 1)) {}

DecodeAhead::~DecodeAhead() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void DecodeAhead::Start(std::vector<absl::string_view> encodings) {
  encodings_ = std::move(encodings);
  batches_ = (encodings_.size() + batch_ - 1) / batch_;
  if (!encodings_.empty()) thread_ = std::thread([this] { Run(); });
}

DecodeAhead::Batch DecodeAhead::Decode(size_t batch,
                                       std::vector<std::shared_ptr<v1::Workload>>* spares) const {
  Batch out;
  const size_t begin = batch * batch_;
  const size_t end = std::min(encodings_.size(), begin + batch_);
  out.reserve(end - begin);
  for (size_t i = begin; i < end; ++i) {
    std::shared_ptr<v1::Workload> reuse;
    if (!spares->empty()) {
      reuse = std::move(spares->back());
      spares->pop_back();
    }
    out.push_back(engine::DecodeStoredWorkload(encodings_[i], std::move(reuse)));
  }
  return out;
}

std::vector<std::shared_ptr<v1::Workload>> DecodeAhead::TakeSpares() {
  std::vector<std::shared_ptr<v1::Workload>> out;
  out.swap(spares_);
  return out;
}

void DecodeAhead::Run() {
  std::vector<std::shared_ptr<v1::Workload>> spares;
  absl::MutexLock lock(&mu_);
  while (true) {
    const auto claimable = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stop_ || claimed_ == batches_ || claimed_ < taken_batches_ + batches_ahead_;
    };
    mu_.Await(absl::Condition(&claimable));
    if (stop_ || claimed_ == batches_) return;
    const size_t batch = claimed_++;
    std::vector<std::shared_ptr<v1::Workload>> handed = TakeSpares();
    std::move(handed.begin(), handed.end(), std::back_inserter(spares));
    mu_.Unlock();
    Batch decoded = Decode(batch, &spares);
    mu_.Lock();
    ready_.emplace(batch, std::move(decoded));
  }
}

engine::DecodedWorkload DecodeAhead::Next() {
  if (taken_ >= encodings_.size()) return {};
  if (at_ == current_.size()) {
    current_.clear();
    at_ = 0;
    absl::MutexLock lock(&mu_);
    // Recycled messages go back with each batch taken, as many as the decoding can use.
    const size_t room = batch_ * batches_ahead_;
    for (std::shared_ptr<v1::Workload>& spare : recycled_) {
      if (spares_.size() >= room) break;
      spares_.push_back(std::move(spare));
    }
    recycled_.clear();  // those beyond that room are freed here
    const size_t wanted = taken_batches_;
    const auto ready = [this, wanted]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return ready_.count(wanted) != 0;
    };
    while (!ready()) {
      if (claimed_ < batches_ && claimed_ < wanted + batches_ahead_) {
        // Rather than wait for the thread, decode the next batch nobody has claimed here.
        const size_t batch = claimed_++;
        std::vector<std::shared_ptr<v1::Workload>> spares = TakeSpares();
        mu_.Unlock();
        Batch decoded = Decode(batch, &spares);
        mu_.Lock();
        ready_.emplace(batch, std::move(decoded));
        std::move(spares.begin(), spares.end(), std::back_inserter(spares_));
        continue;
      }
      mu_.Await(absl::Condition(&ready));
    }
    auto it = ready_.find(wanted);
    current_ = std::move(it->second);
    ready_.erase(it);
    ++taken_batches_;
  }
  ++taken_;
  return std::move(current_[at_++]);
}

void DecodeAhead::Recycle(std::shared_ptr<v1::Workload> spare) {
  if (spare != nullptr) recycled_.push_back(std::move(spare));
}

}  // namespace admitd
