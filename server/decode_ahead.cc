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
  if (!encodings_.empty()) thread_ = std::thread([this] { Run(); });
}

void DecodeAhead::Run() {
  std::vector<std::shared_ptr<v1::Workload>> spares;
  for (size_t begin = 0; begin < encodings_.size(); begin += batch_) {
    {
      absl::MutexLock lock(&mu_);
      const auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stop_ || ready_.size() < batches_ahead_;
      };
      mu_.Await(absl::Condition(&room));
      if (stop_) return;
      std::move(spares_.begin(), spares_.end(), std::back_inserter(spares));
      spares_.clear();
    }
    Batch batch;
    const size_t end = std::min(encodings_.size(), begin + batch_);
    batch.reserve(end - begin);
    for (size_t i = begin; i < end; ++i) {
      std::shared_ptr<v1::Workload> reuse;
      if (!spares.empty()) {
        reuse = std::move(spares.back());
        spares.pop_back();
      }
      batch.push_back(engine::DecodeStoredWorkload(encodings_[i], std::move(reuse)));
    }
    absl::MutexLock lock(&mu_);
    ready_.push_back(std::move(batch));
  }
}

engine::DecodedWorkload DecodeAhead::Next() {
  if (taken_ >= encodings_.size()) return {};
  if (at_ == current_.size()) {
    current_.clear();
    at_ = 0;
    absl::MutexLock lock(&mu_);
    // Recycled messages go back with each batch taken, as many as the decoder can use.
    const size_t room = batch_ * batches_ahead_;
    for (std::shared_ptr<v1::Workload>& spare : recycled_) {
      if (spares_.size() >= room) break;
      spares_.push_back(std::move(spare));
    }
    recycled_.clear();  // those beyond the decoder's room are freed here
    const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !ready_.empty(); };
    mu_.Await(absl::Condition(&ready));
    current_ = std::move(ready_.front());
    ready_.pop_front();
  }
  ++taken_;
  return std::move(current_[at_++]);
}

void DecodeAhead::Recycle(std::shared_ptr<v1::Workload> spare) {
  if (spare != nullptr) recycled_.push_back(std::move(spare));
}

}  // namespace admitd
