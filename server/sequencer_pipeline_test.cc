// The Sequencer over a store with a commit pipeline (store::CommitPipeline): batches on their
// way at once, answered in the order they were applied whatever order the store takes them in,
// and a batch behind a failed one never answered as committed.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/sequencer.h"
#include "server/watch_hub.h"

namespace admitd {
namespace {

// A store whose test decides when, and how, each started batch lands.
class HeldStore : public store::Store, public store::CommitPipeline {
 public:
  // store::Store: Commit is not used while the pipeline is.
  absl::Status Commit(const store::Batch&) override {
    return absl::UnimplementedError("commits go through the pipeline");
  }
  absl::Status ForEachObject(const std::function<absl::Status(v1::ObjectKind, absl::string_view,
                                                              absl::string_view)>&) const override {
    return absl::OkStatus();
  }
  uint64_t revision() const override {
    absl::MutexLock lock(&mu_);
    return revision_;
  }
  uint64_t oldest_event_revision() const override { return 1; }
  absl::Status ReadEvents(uint64_t, size_t, std::vector<store::LoggedEvent>*) const override {
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> CompactEvents() override { return 0; }
  absl::Status Recover() override { return absl::UnavailableError("still down"); }
  absl::Status Close() override { return absl::OkStatus(); }
  store::CommitPipeline* pipeline() override { return this; }

  // store::CommitPipeline.
  int depth() const override { return 4; }
  void Start(std::shared_ptr<const store::Batch> batch, std::function<void()> ready) override {
    absl::MutexLock lock(&mu_);
    held_.push_back(Held{std::move(batch), std::move(ready)});
  }
  absl::Status Finish() override {
    absl::MutexLock lock(&mu_);
    Held& oldest = held_[finished_++];
    if (!failed_.ok()) return failed_;
    if (!oldest.answer.ok()) {
      failed_ = absl::UnavailableError(oldest.answer.message());
      return failed_;
    }
    revision_ = oldest.batch->revision;
    committed_.push_back(oldest.batch->revision);
    return absl::OkStatus();
  }

  // The test's side: waits until `n` batches were started; lands the i-th with `answer`.
  void AwaitStarted(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return held_.size() >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
  }
  void Land(size_t i, absl::Status answer) {
    std::function<void()> ready;
    {
      absl::MutexLock lock(&mu_);
      held_[i].answer = std::move(answer);
      ready = held_[i].ready;
    }
    ready();
  }
  std::vector<uint64_t> committed() const {
    absl::MutexLock lock(&mu_);
    return committed_;
  }

 private:
  struct Held {
    std::shared_ptr<const store::Batch> batch;
    std::function<void()> ready;
    absl::Status answer;
  };
  mutable absl::Mutex mu_;
  std::vector<Held> held_ ABSL_GUARDED_BY(mu_);
  size_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
  uint64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint64_t> committed_ ABSL_GUARDED_BY(mu_);
};

// Enqueues an Apply of flavor `name`; its answer is appended to `answers` as "name: status".
void ApplyHeldFlavor(Sequencer& seq, const std::string& name, absl::Mutex* mu,
                     std::vector<std::string>* answers) {
  Command cmd;
  cmd.apply = [name](engine::Engine& e, absl::Time now) {
    v1::ApplyRequest req;
    req.mutable_object()->mutable_resource_flavor()->mutable_metadata()->set_name(name);
    ASSERT_TRUE(e.Apply(req, now).ok());
  };
  cmd.respond = [name, mu, answers](const absl::Status& commit) {
    absl::MutexLock lock(mu);
    answers->push_back(absl::StrCat(name, ": ", absl::StatusCodeToString(commit.code())));
  };
  seq.Enqueue(std::move(cmd));
}

class SequencerPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(engine_.FinishRestore(0).ok()); }

  size_t Answered() {
    absl::MutexLock lock(&mu_);
    return answers_.size();
  }
  std::vector<std::string> AwaitAnswers(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return answers_.size() >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(10));
    return answers_;
  }

  engine::Engine engine_;
  HeldStore store_;
  WatchHub hub_;
  absl::Mutex mu_;
  std::vector<std::string> answers_ ABSL_GUARDED_BY(mu_);
};

TEST_F(SequencerPipelineTest, BatchesOnTheirWayAtOnceAreAnsweredInOrder) {
  uint64_t revision = 0;
  auto sub = hub_.Subscribe({}, [] {}, &revision);
  Sequencer seq(&engine_, &store_, &hub_, SequencerOptions{.manual_scheduling = true});
  seq.Start();
  ApplyHeldFlavor(seq, "a", &mu_, &answers_);
  store_.AwaitStarted(1);
  ApplyHeldFlavor(seq, "b", &mu_, &answers_);
  store_.AwaitStarted(2);  // started before the first landed: both on their way at once

  store_.Land(1, absl::OkStatus());  // the store takes the second first
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(Answered(), 0u);  // its answer waits for the first
  EXPECT_TRUE(store_.committed().empty());

  store_.Land(0, absl::OkStatus());
  EXPECT_EQ(AwaitAnswers(2), (std::vector<std::string>{"a: OK", "b: OK"}));
  ASSERT_EQ(store_.committed().size(), 2u);
  EXPECT_LT(store_.committed()[0], store_.committed()[1]);
  std::deque<EventPtr> events;
  absl::Status closed;
  ASSERT_TRUE(sub->Take(&events, &closed));
  ASSERT_EQ(events.size(), 2u);  // published in order, once each batch was finished
  EXPECT_EQ(events[0]->queue_object().resource_flavor().metadata().name(), "a");
  EXPECT_EQ(events[1]->queue_object().resource_flavor().metadata().name(), "b");
  seq.Stop();
}

TEST_F(SequencerPipelineTest, ABatchBehindAFailedOneIsNotAnsweredAsCommitted) {
  Sequencer seq(&engine_, &store_, &hub_, SequencerOptions{.manual_scheduling = true});
  seq.Start();
  ApplyHeldFlavor(seq, "a", &mu_, &answers_);
  store_.AwaitStarted(1);
  ApplyHeldFlavor(seq, "b", &mu_, &answers_);
  store_.AwaitStarted(2);

  store_.Land(1, absl::OkStatus());  // the second landed...
  store_.Land(0, absl::UnavailableError("etcd has no quorum"));  // ...the first did not
  EXPECT_EQ(AwaitAnswers(2), (std::vector<std::string>{"a: UNAVAILABLE", "b: UNAVAILABLE"}));
  EXPECT_TRUE(store_.committed().empty());
  EXPECT_TRUE(absl::IsUnavailable(seq.health())) << seq.health();
  seq.Stop();
}

}  // namespace
}  // namespace admitd
