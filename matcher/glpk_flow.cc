#include <glpk.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "matcher/flow_backend.h"
#include "matcher/glpk_thread.h"

namespace allox::matcher {
namespace {

// Doubles hold integers exactly up to 2^53; larger costs would make the LP inexact.
constexpr std::int64_t kMaxExactCost = std::int64_t{1} << 53;
// Above this cost (ms) the floating-point simplex's tolerances, relative to the costs, can
// accept a basis whose reduced costs are a few ms negative: a plan of 1e11 s busy machines cost
// 4 s more than the optimum. From here on the simplex's basis is finished by glp_exact, GLPK's
// simplex in rational arithmetic, which the doubles (integers up to 2^53) enter exactly.
constexpr std::int64_t kExactFinishCost = std::int64_t{1} << 22;

struct ProblemDeleter {
  void operator()(glp_prob* lp) const { glp_delete_prob(lp); }
};

}  // namespace

Expected<SlotFlow> solve_with_glpk(const SlotNetwork& network) {
  std::int64_t largest = 0;
  for (std::int64_t cost : network.arc_cost) {
    if (cost > kMaxExactCost) {
      return Error{"GLPK backend: costs above 2^53 ms are not exact in its doubles; use lemon"};
    }
    largest = std::max(largest, cost < 0 ? -cost : cost);
  }
  for (const Outlet& outlet : network.outlets) {
    largest = std::max(largest, outlet.cost < 0 ? -outlet.cost : outlet.cost);
  }
  matcher::glpk_env_ends_with_thread();
  glp_term_out(GLP_OFF);
  std::unique_ptr<glp_prob, ProblemDeleter> lp(glp_create_prob());
  glp_set_obj_dir(lp.get(), GLP_MIN);

  // Rows: one per job (takes exactly one arc), then one per slot (what enters leaves).
  const int jobs = static_cast<int>(network.job_count);
  const int slots = static_cast<int>(network.slot_count);
  if (jobs + slots > 0) glp_add_rows(lp.get(), jobs + slots);
  for (int j = 1; j <= jobs; ++j) glp_set_row_bnds(lp.get(), j, GLP_FX, 1, 1);
  for (int s = 1; s <= slots; ++s) glp_set_row_bnds(lp.get(), jobs + s, GLP_FX, 0, 0);

  // Columns: job arcs x in [0,1], then outlets y in [0, capacity]. GLPK arrays are 1-based.
  const int job_arcs = static_cast<int>(network.arc_slot.size());
  const int outlets = static_cast<int>(network.outlets.size());
  if (job_arcs + outlets > 0) glp_add_cols(lp.get(), job_arcs + outlets);
  std::vector<int> row_index{0};
  std::vector<int> column_index{0};
  std::vector<double> value{0};
  for (int j = 0; j < jobs; ++j) {
    for (std::size_t a = network.job_begin[j]; a < network.job_begin[j + 1]; ++a) {
      const int column = static_cast<int>(a) + 1;
      glp_set_col_bnds(lp.get(), column, GLP_DB, 0, 1);
      glp_set_obj_coef(lp.get(), column, static_cast<double>(network.arc_cost[a]));
      row_index.insert(row_index.end(), {j + 1, jobs + static_cast<int>(network.arc_slot[a]) + 1});
      column_index.insert(column_index.end(), {column, column});
      value.insert(value.end(), {1.0, 1.0});
    }
  }
  for (int o = 0; o < outlets; ++o) {
    const Outlet& outlet = network.outlets[o];
    const int column = job_arcs + o + 1;
    glp_set_col_bnds(lp.get(), column, GLP_DB, 0, static_cast<double>(outlet.capacity));
    glp_set_obj_coef(lp.get(), column, static_cast<double>(outlet.cost));
    row_index.push_back(jobs + static_cast<int>(outlet.slot) + 1);
    column_index.push_back(column);
    value.push_back(-1.0);
  }
  glp_load_matrix(lp.get(), static_cast<int>(value.size()) - 1, row_index.data(),
                  column_index.data(), value.data());

  glp_smcp parameters;
  glp_init_smcp(&parameters);
  parameters.msg_lev = GLP_MSG_OFF;
  parameters.presolve = GLP_ON;
  SlotFlow flow;
  int code = glp_simplex(lp.get(), &parameters);
  if (code == GLP_ENOPFS) return flow;
  if (code == 0 && largest > kExactFinishCost && glp_get_status(lp.get()) == GLP_OPT) {
    code = glp_exact(lp.get(), &parameters);
  }
  if (code != 0) return Error{"GLPK simplex failed with code " + std::to_string(code)};
  const int status = glp_get_status(lp.get());
  if (status == GLP_NOFEAS || status == GLP_INFEAS) return flow;
  if (status != GLP_OPT)
    return Error{"GLPK simplex ended without an optimum (status " + std::to_string(status) + ")"};

  // The constraint matrix is totally unimodular, so the basic optimum is integral.
  auto integral = [&](int column, std::int64_t& out) -> bool {
    const double x = glp_get_col_prim(lp.get(), column);
    out = std::llround(x);
    return std::abs(x - static_cast<double>(out)) < 1e-6;
  };
  flow.feasible = true;
  flow.job_arc.assign(network.job_count, 0);
  for (int a = 0; a < job_arcs; ++a) {
    std::int64_t x = 0;
    if (!integral(a + 1, x)) return Error{"GLPK returned a fractional basic solution (a bug)"};
    if (x == 0) continue;
    const auto job = static_cast<std::size_t>(std::upper_bound(network.job_begin.begin(),
                                                               network.job_begin.end(),
                                                               static_cast<std::size_t>(a)) -
                                              network.job_begin.begin() - 1);
    flow.job_arc[job] = static_cast<std::size_t>(a);
    flow.cost += network.arc_cost[a];
  }
  for (int o = 0; o < outlets; ++o) {
    std::int64_t y = 0;
    if (!integral(job_arcs + o + 1, y)) {
      return Error{"GLPK returned a fractional basic solution (a bug)"};
    }
    flow.outlet_flow.push_back(y);
    flow.cost += y * network.outlets[o].cost;
  }
  return flow;
}

}  // namespace allox::matcher
