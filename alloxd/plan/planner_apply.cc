// The book's one write path (Planner::apply, planner.h): the group commit of concurrent callers'
// batches, and a group's steps (check, one store transaction, the book in chunks, one wake).
// What each kind of change does at each step: planner_steps.cc.
#include <condition_variable>
#include <exception>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "alloxd/plan/planner_steps.h"

namespace allox::extender {

namespace {

template <typename Kind, typename... Kinds>
constexpr bool is_one_of = (std::is_same_v<Kind, Kinds> || ...);

// How durable `change` asks to be (book_change.h).
Durability durability_of(const BookChange& change) {
  return std::visit(
      [](const auto& c) {
        using Kind = std::decay_t<decltype(c)>;
        using namespace book;
        if constexpr (is_one_of<Kind, RemoveVariant, Admit, RollBackGang>) {
          return Durability::kWritten;
        } else if constexpr (is_one_of<Kind, SetInventory, Park, ForgetFinished, EndMember,
                                       AdoptGang>) {
          return Durability::kWritten;  // they write no row: never a reason to fsync
        } else if constexpr (is_one_of<Kind, RecordBindIntent, DropBindIntent, RemoveJob,
                                       AddProfile>) {
          return Durability::kSynced;
        } else {
          return c.durability;
        }
      },
      change);
}

}  // namespace

struct Planner::Batch {
  std::span<const BookChange> changes;
  std::vector<Applied> outcomes;
  bool synced = false;  // a change of it is synced
  // Under group_mu_: outcomes are final and the committer let go of them.
  bool done = false;
  // Under group_mu_: this batch's caller commits the next group (the queue's front).
  bool lead = false;
  // Its caller waits here, woken only for its own outcome or its turn to lead: a condition
  // shared by every waiter would wake them all at each commit (tens of /bind threads, the
  // watch and the controller's workers) to find, but for one, nothing to do.
  std::condition_variable cv;
};

std::vector<Status> Planner::apply(std::span<const BookChange> changes) {
  std::vector<Applied> applied = apply_changes(changes);
  std::vector<Status> outcomes;
  outcomes.reserve(applied.size());
  for (Applied& a : applied) outcomes.push_back(std::move(a.status));
  return outcomes;
}

std::vector<Planner::Applied> Planner::apply_changes(std::span<const BookChange> changes) {
  if (changes.empty()) return {};
  Batch batch;
  batch.changes = changes;
  batch.outcomes.resize(changes.size());
  for (const BookChange& change : changes) {
    batch.synced = batch.synced || durability_of(change) == Durability::kSynced;
  }
  std::unique_lock lock(group_mu_);
  group_queue_.push_back(&batch);
  if (group_committing_ && options_.group_hooks.joined) {
    options_.group_hooks.joined(group_queue_.size());
  }
  // Leader/follower: a caller that finds no group being committed leads (the queue holds only
  // its batch then); a leader commits one group and hands the lead to the queue's front, so the
  // batches that arrive during one commit share the next. A group takes the batches of the
  // front one's class, synced or written, in order: a written batch (the watch's, a written
  // start) never waits for an fsync of its own, only for the group before it, and the synced
  // ones (bind intents) share one fsync. A leader is the front, so its own batch is in its group.
  if (!group_committing_) {
    group_committing_ = true;
    batch.lead = true;
  }
  while (!batch.done) {
    if (!batch.lead) {
      batch.cv.wait(lock);
      continue;
    }
    batch.lead = false;
    std::vector<Batch*> group;
    const bool synced = group_queue_.front()->synced;
    std::erase_if(group_queue_, [&](Batch* b) {
      if (b->synced != synced) return false;
      group.push_back(b);
      return true;
    });
    lock.unlock();
    try {
      commit_group(group);
    } catch (const std::exception& e) {
      // Every caller must get an answer and the next group a leader, whatever went wrong.
      for (Batch* b : group) {
        for (Applied& a : b->outcomes) {
          if (a.status) a.status = Error{"applying the change failed: " + std::string(e.what())};
        }
      }
    }
    lock.lock();
    for (Batch* b : group) {
      b->done = true;  // its caller may return from here on (it needs group_mu_ to see it)
      if (b != &batch) b->cv.notify_one();
    }
    if (group_queue_.empty()) {
      group_committing_ = false;
    } else {
      group_queue_.front()->lead = true;
      group_queue_.front()->cv.notify_one();
    }
  }
  return std::move(batch.outcomes);
}

namespace {

Durability stricter(Durability a, Durability b) {
  return a == Durability::kSynced || b == Durability::kSynced ? Durability::kSynced
                                                              : Durability::kWritten;
}

}  // namespace

void Planner::commit_group(const std::vector<Batch*>& group) {
  std::vector<Step> steps;
  for (Batch* b : group) {
    for (std::size_t i = 0; i < b->changes.size(); ++i) {
      steps.push_back({&b->changes[i], &b->outcomes[i]});
    }
  }
  std::lock_guard write(write_mu_);
  if (options_.group_hooks.before_commit) options_.group_hooks.before_commit(group.size());
  bool replan = false;
  while (!steps.empty()) {
    GroupView view;
    view.at = now();
    Steps kinds{*this, view};
    // 1. Check each against the book (and the group's earlier changes).
    std::vector<Step*> writes;
    std::vector<Step*> books;
    std::vector<Step> next_group;
    Durability durability = Durability::kWritten;
    for (Step& step : steps) {
      kinds.check(step);
      if (step.then == Step::Then::kNextGroup) {
        next_group.push_back({step.change, step.outcome});
      } else if (step.then == Step::Then::kWrite) {
        writes.push_back(&step);
        durability = stricter(durability, step.durability);
      }
      // A bind intent being made is a row only.
      if ((step.then == Step::Then::kWrite || step.then == Step::Then::kBook) &&
          !std::holds_alternative<book::RecordBindIntent>(*step.change)) {
        books.push_back(&step);
      }
      replan = replan || step.replan;
    }
    // 2. One transaction. When a change's write fails, nothing of the transaction is kept and it
    // is written again with each change in a savepoint of its own, so that change fails alone;
    // when the transaction itself fails (BEGIN or COMMIT), each change is written alone.
    auto write_all = [&](bool apart) -> Status {
      for (Step* step : writes) {
        if (apart) {
          step->outcome->status = store_->savepoint([&] { return kinds.write(*step); });
        } else if (Status s = kinds.write(*step); !s) {
          return s;
        }
      }
      return OkStatus();
    };
    if (writes.size() == 1) {
      writes.front()->outcome->status =
          store_->batch([&] { return kinds.write(*writes.front()); }, writes.front()->durability);
    } else if (!writes.empty()) {
      Status together = store_->batch([&] { return write_all(false); }, durability);
      if (!together) together = store_->batch([&] { return write_all(true); }, durability);
      if (!together) {
        for (Step* step : writes) {
          step->outcome->status =
              store_->batch([&] { return kinds.write(*step); }, step->durability);
        }
      }
    }
    // 3. The book, a chunk at a time.
    write_book_in_chunks(books.size(), [&](std::size_t begin, std::size_t end) {
      for (std::size_t i = begin; i < end; ++i) kinds.book(*books[i]);
      if (view.admitted) {
        book_.touch();
        admitted_version_.store(book_.version(), std::memory_order_release);
        view.admitted = false;
      }
    });
    for (const Step& step : steps) {
      if (step.same_as != nullptr) step.outcome->status = step.same_as->outcome->status;
      replan = replan || (step.replan && step.outcome->status.ok());
    }
    steps = std::move(next_group);
  }
  // 4. One wake for the group.
  if (replan) wake();
}

}  // namespace allox::extender
