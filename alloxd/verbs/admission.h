// The mutating admission webhook that puts allox's pods in its queue (POST /admission/gate):
// an AdmissionReview v1 in, an AdmissionReview v1 out. A Pod being created whose
// spec.schedulerName is allox's gets the scheduling gate allox.io/queue (a JSONPatch), so
// kube-scheduler leaves it alone until alloxd's controller removes the gate from the variant
// the plan starts. Every other object or operation is allowed unchanged; the webhook never
// denies a pod.
//
// A body that is not an AdmissionReview v1 is an Error naming the field (the route answers
// 400); the API server then applies the webhook's failurePolicy.
//
// Thread-safe: pure.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace allox::extender {

// Where alloxd serves the webhook (routes.h).
inline constexpr std::string_view kGateWebhookPath = "/admission/gate";

// The AdmissionReview response body for `review`.
Expected<std::string> review_gate_admission(std::string_view review,
                                            const std::string& scheduler_name);

std::string base64(std::string_view bytes);

}  // namespace allox::extender
