// The object store behind the fake Kubernetes API server: pods, nodes, events and leases as
// kube-apiserver v1.28 keeps them, with resourceVersions, validation, the binding subresource
// and watch history. fake_api_server.h puts HTTP in front of it; the kube-scheduler emulator
// and tests also use it in-process (the way kube-scheduler reads its informer cache).
//
// What it holds to, because clients depend on it (kube-apiserver behaviour, not a convenience):
//   - one resourceVersion counter for all objects, bumped by every write; a list carries the
//     counter in metadata.resourceVersion and a watch from N delivers every change after N;
//   - a watch from a resourceVersion older than the retained history answers with one ERROR
//     event carrying a 410 Expired Status and ends (the client must re-list); `compact()` drops
//     the history, as etcd compaction does;
//   - a watch with resourceVersion "" or "0" first sends an ADDED event per matching object;
//   - a watch whose selector stops matching an object sends DELETED (and ADDED when it starts);
//   - pods: spec is immutable except spec.schedulingGates (removals only, 422 otherwise) and
//     the few fields upstream allows; while a pod is gated (before the update), its scheduling
//     directives may narrow: spec.nodeSelector may gain keys, required node affinity may be
//     set when it had no terms (or its terms gain requirements), preferred node affinity may
//     change; status changes only through the status subresource;
//     creating a pod with both gates and spec.nodeName is 422;
//   - binding (POST pods/{name}/binding): 409 Conflict when the pod is already bound, still has
//     scheduling gates, is being deleted, or the Binding's uid does not match; 201 with a Status;
//   - update with a stale metadata.resourceVersion (PUT, or a patch that sets it) is 409;
//   - deleting a bound running pod first sets deletionTimestamp (MODIFIED), then removes it.
// Objects are immutable once stored (shared_ptr<const json>), so readers never copy under lock,
// and a patch or a binding builds the new version outside the lock from the version it read,
// storing it only if that version is still current (else it runs again on the newer one): the
// result is that of the writes applied one at a time, each to the latest version.
//
// Thread-safe. Subscribers are called with the store locked, in resourceVersion order: they
// must only copy what they need and return, never call back into the store.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/time_text.h"  // rfc3339, as metav1.Time renders
#include "kubesim/api_error.h"
#include "kubesim/job_objects.h"
#include "kubesim/patches.h"
#include "kubesim/selectors.h"

namespace allox::emulator {

using ObjectPtr = std::shared_ptr<const nlohmann::json>;

// A kind of object the store serves.
struct ResourceType {
  std::string plural;       // "pods"
  std::string kind;         // "Pod"
  std::string api_version;  // "v1", "coordination.k8s.io/v1", "events.k8s.io/v1"
  bool namespaced = true;
};
const ResourceType& pods_resource();
const ResourceType& nodes_resource();
const ResourceType& events_resource();     // core/v1 Event
const ResourceType& events_v1_resource();  // events.k8s.io/v1 Event
const ResourceType& leases_resource();     // coordination.k8s.io/v1 Lease
const ResourceType& jobs_resource();       // batch/v1 Job (job_objects.h: defaults, validation)
// By API group version ("v1", "coordination.k8s.io/v1", ...) and plural; null when not served.
const ResourceType* find_resource(const std::string& api_version, const std::string& plural);

// One watch event. `raw` is set only for lines injected by fault injection (garbage).
struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  ObjectPtr object;
  std::string raw;
  // The newline-terminated JSON line of the wire protocol.
  std::string line() const;
};

// A change as subscribers see it: before is null for ADDED, after is null for DELETED.
struct Change {
  const ResourceType* resource = nullptr;
  std::string type;  // ADDED, MODIFIED, DELETED
  ObjectPtr before, after;
  std::uint64_t resource_version = 0;
};

class WatchStream {
 public:
  enum class Next { kEvent, kTimeout, kClosed };
  // Waits up to `wait` for the next event (a zero wait answers at once). kClosed: the watch ended
  // (410 sent, close() or break); broken() tells whether it was broken on purpose (the server then
  // drops the connection without ending the chunked body).
  Next next(WatchEvent& event, std::chrono::milliseconds wait);
  void close();
  bool broken() const;
  ~WatchStream();

 private:
  friend class ApiObjects;
  struct State;
  std::shared_ptr<State> state_;
};

struct WatchRequest {
  const ResourceType* resource = nullptr;
  std::string namespace_name;  // empty: all namespaces
  Selector selector;
  std::string resource_version;  // "", "0" or a number
  bool allow_bookmarks = false;
};

struct ListRequest {
  const ResourceType* resource = nullptr;
  std::string namespace_name;  // empty: all namespaces
  Selector selector;
  std::size_t limit = 0;  // 0: everything
  std::string continue_token;
};

class ApiObjects {
 public:
  using Clock = std::function<double()>;  // Unix seconds; timestamps in objects come from it
  // Mutating admission for pod creation: returns the (possibly changed) pod or an error that
  // rejects the create. Called without the store lock.
  using Admission = std::function<ApiResult<nlohmann::json>(const nlohmann::json& pod)>;

  explicit ApiObjects(Clock clock = {});
  ~ApiObjects();
  ApiObjects(const ApiObjects&) = delete;
  ApiObjects& operator=(const ApiObjects&) = delete;

  ApiResult<ObjectPtr> create(const ResourceType& type, const std::string& namespace_name,
                              nlohmann::json object);
  ApiResult<ObjectPtr> get(const ResourceType& type, const std::string& namespace_name,
                           const std::string& name) const;
  // PUT; status_only: the status subresource (only .status is taken from `object`).
  ApiResult<ObjectPtr> update(const ResourceType& type, const std::string& namespace_name,
                              const std::string& name, nlohmann::json object, bool status_only);
  ApiResult<ObjectPtr> patch(const ResourceType& type, const std::string& namespace_name,
                             const std::string& name, PatchType patch_type, const std::string& body,
                             bool status_only);
  // options: a DeleteOptions object or null; preconditions.uid / .resourceVersion are checked.
  // A Job's dependents (the pods it controls) follow options.propagationPolicy (batch/v1's
  // default: Orphan): Orphan takes the Job's ownerReference off them before the Job goes;
  // Foreground deletes them first (the garbage collector's work, done at once: the Job is
  // never seen with its foregroundDeletion finalizer); Background leaves them to the garbage
  // collector (job_controller.h), which deletes them after the Job is gone.
  ApiResult<ObjectPtr> remove(const ResourceType& type, const std::string& namespace_name,
                              const std::string& name, const nlohmann::json& options);
  // POST pods/{name}/binding with a v1.Binding body; the answer is the Status kube-apiserver
  // returns (201 Success).
  ApiResult<nlohmann::json> bind(const std::string& namespace_name, const std::string& name,
                                 const nlohmann::json& binding);
  // A <Kind>List with metadata.resourceVersion (and continue/remainingItemCount when limited).
  ApiResult<nlohmann::json> list(const ListRequest& request) const;
  ApiResult<std::shared_ptr<WatchStream>> watch(const WatchRequest& request);

  std::uint64_t resource_version() const;
  // Objects of one type, in key order (tests, the emulator's start-up).
  std::vector<ObjectPtr> objects(const ResourceType& type) const;

  void set_admission(Admission admission);
  // replay_existing: the subscriber first gets an ADDED for every stored object, atomically
  // with subscribing (nothing is missed or seen out of order).
  int subscribe(std::function<void(const Change&)> subscriber, bool replay_existing = false);
  void unsubscribe(int id);

  // Fault injection and maintenance.
  void compact();                                   // forget history: older watches get 410
  void break_watches();                             // every open watch stream ends abruptly
  void inject_watch_line(const std::string& line);  // sent as-is to every open watch stream
  void send_bookmarks();  // BOOKMARK to every stream that asked for them and is caught up
  double now() const;

 private:
  friend class WatchStream;
  struct State;
  ApiResult<ObjectPtr> remove_locked(const ResourceType& type, const std::string& key,
                                     ObjectPtr old, const nlohmann::json& options);
  void settle_dependents(const std::string& ns, const std::string& owner_uid,
                         Propagation policy);
  std::shared_ptr<State> state_;
};

}  // namespace allox::emulator
