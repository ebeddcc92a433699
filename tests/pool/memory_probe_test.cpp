// Memory probes: the kernel files' parsers, a fake /proc + cgroup tree
// (v2 nested limits, v1), and the live probe on this machine.
#include "pool/memory_probe.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "pool/memory_limits.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::memory_probe_test {
namespace {

namespace fs = std::filesystem;

void Write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  ASSERT_TRUE(WriteFileAtomic(path, text).ok());
}

constexpr const char* kMeminfo =
    "MemTotal:       16384000 kB\n"
    "MemFree:         1000000 kB\n"
    "MemAvailable:    8192000 kB\n"
    "Inactive(anon):   512000 kB\n"
    "SwapTotal:       4096000 kB\n"
    "SwapFree:        2048000 kB\n";

TEST(MemoryProbe, ParsesSmapsRollupStatusAndMeminfo) {
  ProcessMemory p = ParseSmapsRollup(
      "56147147b000-7fffb4243000 ---p 00000000 00:00 0   [rollup]\n"
      "Rss:                1600 kB\nPss:                 234 kB\nPss_Anon:  112 kB\n");
  EXPECT_TRUE(p.ok);
  EXPECT_EQ(p.rss_bytes, 1600u * 1024);
  EXPECT_EQ(p.pss_bytes, 234u * 1024);
  EXPECT_FALSE(ParseSmapsRollup("garbage\nRss: lots kB\n").ok);

  ProcessMemory s = ParseProcStatus("Name:\tllmhost\nVmPeak:\t  9000 kB\nVmRSS:\t    4242 kB\n");
  EXPECT_TRUE(s.ok);
  EXPECT_EQ(s.rss_bytes, 4242u * 1024);

  SystemMemory m;
  ParseMeminfo(kMeminfo, &m);
  EXPECT_TRUE(m.ok);
  EXPECT_EQ(m.mem_total, 16384000ull * 1024);
  EXPECT_EQ(m.mem_available, 8192000ull * 1024);
  EXPECT_EQ(m.swap_free, 2048000ull * 1024);
  EXPECT_EQ(m.inactive_anon, 512000ull * 1024);
  EXPECT_EQ(m.EffectiveTotal(), m.mem_total);
  EXPECT_EQ(m.EffectiveAvailable(), m.mem_available);
}

TEST(MemoryProbe, ParsesCgroupFiles) {
  EXPECT_EQ(ParseCgroupLimit("max\n"), 0u);
  EXPECT_EQ(ParseCgroupLimit("1073741824\n"), 1073741824u);
  EXPECT_EQ(ParseCgroupLimit("9223372036854771712\n"), 0u);  // cgroup v1 "no limit"
  EXPECT_EQ(ParseCgroupLimit("-1"), 0u);
  EXPECT_EQ(ParseKeyValue("anon 5\ninactive_file 1234\nactive_file 9\n", "inactive_file"), 1234u);
  EXPECT_EQ(ParseKeyValue("anon 5\n", "inactive_file"), 0u);
  const char* self = "12:memory:/docker/abc\n4:cpu,cpuacct:/x\n0::/user.slice/app.scope\n";
  EXPECT_EQ(ParseCgroupPath(self), "/user.slice/app.scope");
  EXPECT_EQ(ParseCgroupPath(self, "memory"), "/docker/abc");
  EXPECT_EQ(ParseCgroupPath(self, "cpuacct"), "/x");
  EXPECT_EQ(ParseCgroupPath("garbage"), "");
}

TEST(MemoryProbe, CgroupLimitBoundsTotalAndAvailable) {
  SystemMemory m;
  ParseMeminfo(kMeminfo, &m);
  m.cgroup_limit = 4ull << 30;
  m.cgroup_current = 3ull << 30;
  m.cgroup_inactive_file = 1ull << 29;  // reclaimable page cache
  EXPECT_EQ(m.EffectiveTotal(), 4ull << 30);
  EXPECT_EQ(m.EffectiveAvailable(), (4ull << 30) - (3ull << 30) + (1ull << 29));
}

TEST(MemoryProbe, ReadsAFakeProcAndCgroupV2Tree) {
  const std::string root = testing::MakeTempDir();
  const std::string proc = root + "/proc", cg = root + "/cgroup";
  Write(proc + "/meminfo", kMeminfo);
  Write(proc + "/self/smaps_rollup", "Rss: 2048 kB\nPss: 1024 kB\n");
  Write(proc + "/self/cgroup", "0::/a/b\n");
  Write(cg + "/cgroup.controllers", "cpu memory\n");
  Write(cg + "/a/memory.max", "2147483648\n");  // the parent's limit is the tighter one
  Write(cg + "/a/memory.current", "1073741824\n");
  Write(cg + "/a/memory.stat", "anon 1\ninactive_file 4096\n");
  Write(cg + "/a/b/memory.max", "max\n");
  LinuxMemoryProbe probe(proc, cg, /*probe_gpus=*/false);
  ProcessMemory p = probe.Process();
  EXPECT_EQ(p.rss_bytes, 2048u * 1024);
  EXPECT_EQ(p.pss_bytes, 1024u * 1024);
  EXPECT_EQ(probe.FootprintBytes(), 2048u * 1024);
  SystemMemory s = probe.System();
  EXPECT_EQ(s.cgroup_limit, 2147483648u);
  EXPECT_EQ(s.cgroup_current, 1073741824u);
  EXPECT_EQ(s.cgroup_inactive_file, 4096u);
  EXPECT_EQ(s.EffectiveTotal(), 2147483648u);
  EXPECT_TRUE(probe.Gpus().empty());
  // The cheap reading without status: smaps_rollup's Rss.
  EXPECT_EQ(probe.ProcessRss().rss_bytes, 2048u * 1024);
  Write(proc + "/self/status", "Name: llmhost\nVmRSS:  2000 kB\n");
  EXPECT_EQ(probe.ProcessRss().rss_bytes, 2000u * 1024);  // the kernel's counter, no page-table walk
  EXPECT_EQ(probe.ProcessRss().pss_bytes, 0u);

  // Without smaps_rollup: VmRSS.
  fs::remove(proc + "/self/smaps_rollup");
  Write(proc + "/self/status", "VmRSS:  777 kB\n");
  EXPECT_EQ(probe.Process().rss_bytes, 777u * 1024);
}

TEST(MemoryProbe, ReadsACgroupV1Limit) {
  const std::string root = testing::MakeTempDir();
  const std::string proc = root + "/proc", cg = root + "/cgroup";
  Write(proc + "/meminfo", kMeminfo);
  Write(proc + "/self/cgroup", "4:memory:/job\n0::/\n");
  Write(cg + "/memory/job/memory.limit_in_bytes", "3221225472\n");
  Write(cg + "/memory/job/memory.usage_in_bytes", "1073741824\n");
  Write(cg + "/memory/job/memory.stat", "total_inactive_file 0\n");
  LinuxMemoryProbe probe(proc, cg, false);
  SystemMemory s = probe.System();
  EXPECT_EQ(s.cgroup_limit, 3221225472u);
  EXPECT_EQ(s.EffectiveAvailable(), std::min<uint64_t>(s.mem_available, 2147483648u));
}

TEST(MemoryProbe, MissingFilesReadAsUnknown) {
  LinuxMemoryProbe probe("/nonexistent/proc", "/nonexistent/cgroup", false);
  EXPECT_FALSE(probe.Process().ok);
  EXPECT_EQ(probe.FootprintBytes(), 0u);
  EXPECT_FALSE(probe.System().ok);
}

TEST(MemoryProbe, LiveReadingsOfThisProcess) {
  if (!IsDirectory("/proc/self")) GTEST_SKIP() << "no /proc";
  LinuxMemoryProbe probe;
  ProcessMemory p = probe.Process();
  ASSERT_TRUE(p.ok);
  EXPECT_GT(p.rss_bytes, 1u << 20);  // a gtest binary holds more than 1 MiB
  SystemMemory s = probe.System();
  ASSERT_TRUE(s.ok);
  EXPECT_GT(s.mem_total, p.rss_bytes);
  EXPECT_LE(s.EffectiveAvailable(), s.EffectiveTotal());
  // On a machine with an NVIDIA driver, NVML reports each GPU's memory.
  for (const GpuMemory& g : probe.Gpus()) {
    EXPECT_GT(g.total_bytes, 0u) << g.index;
    EXPECT_LE(g.free_bytes, g.total_bytes) << g.name;
    EXPECT_LE(g.used_bytes, g.total_bytes) << g.name;
    const MemoryLimits d = ComputeDeviceLimits(GuardSettings(), g, 0);
    EXPECT_GT(d.admission_ceiling, 0u);
    EXPECT_LE(d.admission_ceiling, g.total_bytes);
    std::printf("GPU %d %s: %llu MiB total, %llu MiB free\n", g.index, g.name.c_str(),
                static_cast<unsigned long long>(g.total_bytes >> 20),
                static_cast<unsigned long long>(g.free_bytes >> 20));
  }
}

TEST(MemoryProbe, FakeReturnsWhatWasSet) {
  FakeMemoryProbe f;
  f.set_footprint(123);
  SystemMemory s;
  s.mem_total = 1000;
  s.ok = true;
  f.set_system(s);
  f.set_gpus({GpuMemory{0, "H200", 100, 60, 40, {}}});
  EXPECT_EQ(f.FootprintBytes(), 123u);
  EXPECT_EQ(f.System().mem_total, 1000u);
  ASSERT_EQ(f.Gpus().size(), 1u);
  EXPECT_EQ(f.Gpus()[0].free_bytes, 60u);
}

}  // namespace
}  // namespace llmhost::memory_probe_test
