#include "models/cluster.h"

#include <doctest/doctest.h>

#include "models/error.h"

using namespace pw::models;
using pw::InputError;
using pw::Json;

TEST_CASE("catalog has the published devices and links") {
  for (const char* name : {"tpu-v2-core", "tpu-v3-core", "p100-16g", "v100-16g", "v100-32g", "a100-40g", "a100-80g",
                           "h100-80g", "cpu-socket"})
    CHECK(find_device(name).memory_bytes > 0);
  CHECK(find_device("tpu-v2-core").memory_bytes == 8LL << 30);
  CHECK(find_device("tpu-v3-core").memory_bytes == 16LL << 30);
  CHECK(find_device("a100-80g").peak_bf16_flops == doctest::Approx(312e12));
  for (const char* name :
       {"pcie3", "pcie4", "nvlink2", "nvlink3", "nvlink4", "ib-100g", "eth-10g", "eth-25g", "eth-100g"})
    CHECK(find_link(name).bandwidth_bytes_per_s > 0);
  CHECK_THROWS_WITH_AS(find_device("tpu-v9"), doctest::Contains("unknown device kind \"tpu-v9\""), InputError);
}

TEST_CASE("hierarchical cluster: level between devices and transfer time") {
  Cluster c("c", find_device("a100-80g"), {{"node", 8, 300e9, 700}, {"net", 4, 12.5e9, 1500}});
  CHECK(c.num_devices() == 32);
  CHECK(c.level_between(0, 7) == 0);
  CHECK(c.level_between(7, 8) == 1);
  CHECK(c.level_between(3, 3) == -1);
  CHECK(c.transfer_ns(0, 1, 300'000) == 700 + 1000);
  CHECK(c.transfer_ns(0, 31, 12'500) == 1500 + 1000);
  CHECK(c.transfer_ns(5, 5, 1 << 20) == 0);
  Json j = c;
  Cluster d = cluster_from_json(j);
  CHECK(Json(d) == j);
}

// A transfer's time is an int64 of ns: past limits::kDurationNs (1e6 s) it is refused naming the
// level, where llround would have returned an unspecified value (a plan printed comm_ns -9.2e18).
TEST_CASE("a transfer past 1e6 s is refused, naming the level") {
  Cluster c("c", find_device("a100-80g"), {{"slow", 4, 1.0, 5}});
  CHECK(c.transfer_ns(0, 1, 1000000) == 5 + 1000000000000000);  // 1e6 bytes at 1 B/s: exactly 1e6 s
  CHECK_THROWS_WITH_AS(c.transfer_ns(0, 1, 1000001),
                       doctest::Contains("cluster level \"slow\": moving 1000001 bytes at 1 bytes/s takes"),
                       InputError);
  CHECK_THROWS_AS(link_bytes_ns(c.levels()[0], 1e30), InputError);
}

TEST_CASE("inconsistent clusters are rejected") {
  Json j = Cluster("c", find_device("v100-16g"), {{"node", 4, 1e9, 0}});
  Json bad = j;
  bad["levels"][0]["count"] = 0;
  CHECK_THROWS_WITH_AS(cluster_from_json(bad), doctest::Contains("/levels/0/count"), InputError);
  bad = j;
  bad["levels"] = Json::array();
  CHECK_THROWS_AS(cluster_from_json(bad), InputError);
  bad = j;
  bad["levels"][0]["bandwidth_bytes_per_s"] = 0;
  CHECK_THROWS_AS(cluster_from_json(bad), InputError);
  // The --bandwidth flag's range, [1, 1e18] bytes/s, in the same words (found by scripts/cli_fuzz.sh:
  // 2^62 bytes/s was accepted from a file, refused from the flag).
  bad["levels"][0]["bandwidth_bytes_per_s"] = 4611686018427387904.0;
  CHECK_THROWS_WITH_AS(cluster_from_json(bad),
                       "/levels/0/bandwidth_bytes_per_s: expected a value in [1, 1e+18], got 4.6116860184273879e+18",
                       InputError);
  bad["levels"][0]["bandwidth_bytes_per_s"] = 0.5;
  CHECK_THROWS_WITH_AS(cluster_from_json(bad),
                       "/levels/0/bandwidth_bytes_per_s: expected a value in [1, 1e+18], got 0.5", InputError);
  bad["levels"][0]["bandwidth_bytes_per_s"] = 1e18;
  CHECK(cluster_from_json(bad).levels()[0].bandwidth_bytes_per_s == 1e18);
  // A device object's rates: 0 (unknown) to 1e18 (found by scripts/cli_fuzz.sh: 1e300 FLOP/s ran).
  bad = j;
  bad["device"] = find_device("a100-80g");
  bad["device"]["peak_bf16_flops"] = 1e300;
  CHECK_THROWS_WITH_AS(cluster_from_json(bad), "/device/peak_bf16_flops: expected a value in [0, 1e+18], got 1e+300",
                       InputError);
  bad["device"]["peak_bf16_flops"] = 0;
  bad["device"]["memory_bandwidth_bytes_per_s"] = -1;
  CHECK_THROWS_AS(cluster_from_json(bad), InputError);
  bad = j;
  bad["device"] = "no-such-gpu";
  CHECK_THROWS_AS(cluster_from_json(bad), InputError);
  CHECK_THROWS_AS(make_flat_cluster(find_device("v100-16g"), 0, 1e9), InputError);
}
