#include "util/url.h"

#include <gtest/gtest.h>

namespace llmhost::url_test {
namespace {

TEST(UrlTest, ParsesSchemeHostPortAndTarget) {
  auto u = ParseUrl("https://huggingface.co/api/models/a/b?blobs=true");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host, "huggingface.co");
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->target, "/api/models/a/b?blobs=true");
  EXPECT_TRUE(u->tls());
  EXPECT_EQ(u->Authority(), "huggingface.co");

  auto p = ParseUrl("HTTP://Example.COM:8080");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->scheme, "http");
  EXPECT_EQ(p->host, "example.com");
  EXPECT_EQ(p->port, 8080);
  EXPECT_EQ(p->target, "/");
  EXPECT_EQ(p->ToString(), "http://example.com:8080/");
}

TEST(UrlTest, IPv6AndFragment) {
  auto u = ParseUrl("http://[::1]:9000/x#frag");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 9000);
  EXPECT_EQ(u->target, "/x");
  EXPECT_EQ(u->Authority(), "[::1]:9000");
}

TEST(UrlTest, RejectsWhatItCannotFetch) {
  for (const char* bad : {"ftp://host/x", "huggingface.co/x", "http:///x", "http://host:0/", "http://host:99999/",
                          "http://host:8a/", "http://user@host/", "http://ho st/", "http://host/a b",
                          "http://host/\r\nX: y", "http://[::1/"}) {
    auto u = ParseUrl(bad);
    EXPECT_FALSE(u.ok()) << bad;
    if (!u.ok()) {
      EXPECT_EQ(u.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(UrlTest, ResolvesRedirectLocations) {
  auto base = ParseUrl("https://huggingface.co/org/m/resolve/abc/dir/model.safetensors?x=1");
  ASSERT_TRUE(base.ok());
  struct Case {
    const char* location;
    const char* expected;
  } cases[] = {
      {"https://cdn-lfs.hf.co/repos/aa/bb?sig=1", "https://cdn-lfs.hf.co/repos/aa/bb?sig=1"},
      {"http://other:81/p", "http://other:81/p"},
      {"//cas.example/blob", "https://cas.example/blob"},
      {"/api/resolve-cache/x", "https://huggingface.co/api/resolve-cache/x"},
      {"other.bin", "https://huggingface.co/org/m/resolve/abc/dir/other.bin"},
      {"../../x?y=2", "https://huggingface.co/org/m/resolve/x?y=2"},
      {"./a/./b/../c", "https://huggingface.co/org/m/resolve/abc/dir/a/c"},
      {"?page=2", "https://huggingface.co/org/m/resolve/abc/dir/model.safetensors?page=2"},
      {"/a/b/../../../../c", "https://huggingface.co/c"},
  };
  for (const Case& c : cases) {
    auto r = ResolveUrl(*base, c.location);
    ASSERT_TRUE(r.ok()) << c.location << ": " << r.status().ToString();
    EXPECT_EQ(r->ToString(), c.expected) << c.location;
  }
  EXPECT_FALSE(ResolveUrl(*base, "ftp://x/y").ok());
  EXPECT_FALSE(ResolveUrl(*base, "/a\r\nInjected: 1").ok());
}

TEST(UrlTest, PercentEncodesOutsideUnreserved) {
  EXPECT_EQ(PercentEncode("refs/pr/1", false), "refs%2Fpr%2F1");
  EXPECT_EQ(PercentEncode("dir/a b+c.json", true), "dir/a%20b%2Bc.json");
  EXPECT_EQ(PercentEncode("Q4_K-M.~x", false), "Q4_K-M.~x");
  EXPECT_EQ(PercentEncode("\xc3\xa9", false), "%C3%A9");
}

}  // namespace
}  // namespace llmhost::url_test
