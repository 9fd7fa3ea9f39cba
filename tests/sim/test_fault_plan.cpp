// The fault plan's text form (sim/README.md, "Fault injection"): what each
// item parses into, and that every mistake is refused with its column, the
// text there and the reason, an unknown kind or key listing the valid ones.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <string>

#include "sim/fault_plan.hpp"

using rdmasim::sim::Direction;
using rdmasim::sim::FaultKind;
using rdmasim::sim::FaultPlan;

TEST_CASE("fault plan: the issue's example parses item by item", "[sim][faults]") {
    auto r = FaultPlan::parse("seed=7; drop:p=0.01; corrupt-fcs:every=100; wq-fatal:wq=0,after=500; "
                              "verb-fail:create_wq,nth=3,errno=ENOMEM");
    REQUIRE(r);
    const FaultPlan& plan = r.value();
    CHECK(plan.seed == 7);
    REQUIRE(plan.faults.size() == 4);
    CHECK(plan.faults[0].kind == FaultKind::drop);
    CHECK(plan.faults[0].when.p == 0.01);
    CHECK(plan.faults[0].dir == Direction::rx);
    CHECK(plan.faults[1].kind == FaultKind::corrupt_fcs);
    CHECK(plan.faults[1].when.every == 100);
    CHECK(plan.faults[2].kind == FaultKind::wq_fatal);
    CHECK(plan.faults[2].wq == 0u);
    CHECK(plan.faults[2].when.after == 500);
    CHECK(plan.faults[3].kind == FaultKind::verb_fail);
    CHECK(plan.faults[3].verb == "create_wq");
    CHECK(plan.faults[3].when.nth == 3);
    CHECK(plan.faults[3].err == ENOMEM);
    CHECK(plan.faults[3].column == 70);
}

TEST_CASE("fault plan: parameters and targets of each kind", "[sim][faults]") {
    auto r = FaultPlan::parse("flip:every=10,bytes=3,dir=both;truncate:p=0.5,len=20;"
                              "reorder:every=50,window=8,filter=udp port 4791;delay:nth=2,us=250;"
                              "out-of-buffer:after=100,frames=32,wq=2;cqe-error:every=7,status=IBV_WC_LOC_PROT_ERR,qp=5,port=1;"
                              "port-down:after=10,frames=100,device=1;device-fatal:after=1000;"
                              "verb-fail:post_send,p=0.25,errno=11");
    REQUIRE(r);
    const auto& f = r.value().faults;
    REQUIRE(f.size() == 9);
    CHECK(f[0].bytes == 3);
    CHECK(f[0].dir == Direction::both);
    CHECK(f[1].len == 20);
    CHECK(f[2].window == 8);
    CHECK(f[2].filter == "udp port 4791");
    CHECK(f[3].delay_ns == 250'000);
    CHECK(f[4].frames == 32);
    CHECK(f[4].wq == 2u);
    CHECK(f[5].status == IBV_WC_LOC_PROT_ERR);
    CHECK(f[5].qp == 5u);
    CHECK(f[6].device == 1u);
    CHECK(f[7].kind == FaultKind::device_fatal);
    CHECK(f[8].err == EAGAIN);
    CHECK(f[8].when.p == 0.25);
    CHECK(FaultPlan::parse("").value().empty());
    CHECK(FaultPlan::parse(" ; seed=1 ;").value().seed == 1);
}

TEST_CASE("fault plan: a typo is refused with where it is and why", "[sim][faults]") {
    struct Case {
        const char* plan;
        const char* column; // "column N ('text')"
        const char* why;
    };
    for (const Case& c : {
             Case{"seed=7; corupt-fcs:every=100", "column 9 ('corupt-fcs')",
                  "unknown fault kind; valid kinds: drop, corrupt-fcs, flip"},
             Case{"drop:p=0.01,evry=3", "column 13 ('evry')",
                  "unknown key for drop; valid keys: p, every, nth, after, device, dir, filter"},
             Case{"drop:p=1.5", "column 6 ('p=1.5')", "p must be a probability"},
             Case{"drop", "column 1 ('drop')", "no trigger"},
             Case{"drop:p=0.1,every=2", "column 1", "more than one trigger"},
             Case{"wq-fatal:after=5", "column 1", "wq-fatal needs wq=N or qp=QPN"},
             Case{"wq-fatal:wq=1,every=5", "column 15 ('every')", "valid keys: after, device, wq"},
             Case{"verb-fail:create_wqq,nth=1,errno=ENOMEM", "column 11 ('create_wqq')",
                  "not a verb that verb-fail knows; valid: open_device"},
             Case{"verb-fail:create_wq,nth=1", "column 1", "needs errno=NAME"},
             Case{"verb-fail:create_wq,nth=1,errno=ENOPE", "column 27", "errno must be a number or one of EPERM"},
             Case{"cqe-error:every=3,status=bad", "column 19",
                  "status must be LOC_LEN_ERR, LOC_PROT_ERR or GENERAL_ERR"},
             Case{"cqe-error:every=3", "column 1", "cqe-error needs status=LOC_LEN_ERR"},
             Case{"out-of-buffer:every=3,wq=1,qp=300", "column 1", "give wq= or qp=, not both"},
             Case{"wq-fatal:after=5,port=2", "column 18 ('port=2')", "port must be 1: the device has one port"},
             Case{"verb-fail:create_wq,nth=1,errno=EIO,port=1", "column 37 ('port')",
                  "unknown key for verb-fail"},
             Case{"seed=x", "column 1", "seed must be a number"},
             Case{"seed=1;seed=2", "column 8", "a second seed"},
             Case{"drop:p", "column 6 ('p')", "expected key=value"},
         }) {
        INFO(c.plan);
        auto r = FaultPlan::parse(c.plan);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == EINVAL);
        CHECK_THAT(r.error().message, Catch::Contains(c.column) && Catch::Contains(c.why));
    }
}
