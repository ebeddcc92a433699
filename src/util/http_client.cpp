#include "util/http_client.h"

#include <strings.h>

#include <memory>

#include "util/url.h"
#include "util/version.h"

namespace llmhost {

namespace {

constexpr size_t kReadBuffer = 256 << 10;

bool IsRedirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

bool HasLineBreak(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

bool ContainsNoCase(std::string_view haystack, std::string_view needle) {
  for (size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    if (strncasecmp(haystack.data() + i, needle.data(), needle.size()) == 0) return true;
  }
  return false;
}

// Reads from `stream` into `buf` until the blank line that ends the head;
// returns the head and leaves the bytes after it in `buf`.
Result<std::string> ReadHead(NetStream& stream, std::string& buf, const std::string& url) {
  char tmp[16 << 10];
  for (;;) {
    size_t end = buf.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::string head = buf.substr(0, end + 2);
      buf.erase(0, end + 4);
      return head;
    }
    if (buf.size() > kHttpMaxHeadBytes) return Status::Corruption(url + ": response headers exceed 64 KiB");
    ASSIGN_OR_RETURN(size_t n, stream.Read(tmp, sizeof tmp));
    if (n == 0) return Status::IOError(url + ": connection closed before the response headers");
    buf.append(tmp, n);
  }
}

// Streams the body of `head` (the bytes already read first) to `deliver`.
Status ReadBody(NetStream& stream, const HttpResponseHead& head, std::string pending, const std::string& url,
                const HttpBodySink& deliver) {
  if (head.status == 204 || head.status == 304 || (head.status >= 100 && head.status < 200)) return Status::OK();
  auto buffer = std::make_unique<char[]>(kReadBuffer);
  if (ContainsNoCase(head.Header("Transfer-Encoding"), "chunked")) {
    ChunkedDecoder decoder;
    std::string out;
    std::string_view in = pending;
    for (;;) {
      size_t used = 0;
      out.clear();
      RETURN_IF_ERROR(decoder.Feed(in, &out, &used).WithContext(url));
      if (!out.empty()) RETURN_IF_ERROR(deliver(out));
      if (decoder.done()) return Status::OK();
      ASSIGN_OR_RETURN(size_t n, stream.Read(buffer.get(), kReadBuffer));
      if (n == 0) return Status::IOError(url + ": connection closed inside a chunked body");
      in = std::string_view(buffer.get(), n);
    }
  }
  const std::string length_text = head.Header("Content-Length");
  if (!length_text.empty()) {
    uint64_t length = 0;
    for (char c : length_text) {
      if (c < '0' || c > '9' || length > (uint64_t{1} << 60)) {
        return Status::Corruption(url + ": bad Content-Length '" + length_text + "'");
      }
      length = length * 10 + static_cast<uint64_t>(c - '0');
    }
    uint64_t got = std::min<uint64_t>(pending.size(), length);
    if (got > 0) RETURN_IF_ERROR(deliver(std::string_view(pending).substr(0, got)));
    while (got < length) {
      ASSIGN_OR_RETURN(size_t n, stream.Read(buffer.get(), std::min<uint64_t>(kReadBuffer, length - got)));
      if (n == 0) {
        return Status::IOError(url + ": connection closed after " + std::to_string(got) + " of " +
                               std::to_string(length) + " bytes");
      }
      got += n;
      RETURN_IF_ERROR(deliver(std::string_view(buffer.get(), n)));
    }
    return Status::OK();
  }
  // Neither: the body ends when the server closes.
  if (!pending.empty()) RETURN_IF_ERROR(deliver(pending));
  for (;;) {
    ASSIGN_OR_RETURN(size_t n, stream.Read(buffer.get(), kReadBuffer));
    if (n == 0) return Status::OK();
    RETURN_IF_ERROR(deliver(std::string_view(buffer.get(), n)));
  }
}

std::string BuildRequest(const Url& url, const HttpGetOptions& options, bool send_credentials) {
  std::string req = options.method + " " + url.target + " HTTP/1.1\r\nHost: " + url.Authority() +
                    "\r\nUser-Agent: llmhost/" + std::string(kVersion) +
                    "\r\nAccept: */*\r\nAccept-Encoding: identity\r\nConnection: close\r\n";
  for (const auto& [k, v] : options.headers) req += k + ": " + v + "\r\n";
  if (send_credentials) {
    for (const auto& [k, v] : options.credentials) req += k + ": " + v + "\r\n";
  }
  if (options.method != "GET" || !options.body.empty()) {
    req += "Content-Length: " + std::to_string(options.body.size()) + "\r\n";
  }
  return req + "\r\n" + options.body;
}

}  // namespace

Result<HttpGetResult> HttpGet(const std::string& url_text, const HttpGetOptions& options, const HttpBodySink& sink) {
  if (options.method.empty() || HasLineBreak(options.method) || options.method.find(' ') != std::string::npos) {
    return Status::InvalidArgument("HTTP method '" + options.method + "'");
  }
  for (const auto& list : {options.headers, options.credentials}) {
    for (const auto& [k, v] : list) {
      if (HasLineBreak(k) || HasLineBreak(v) || k.empty()) {
        return Status::InvalidArgument("HTTP header '" + k + "': empty name or a line break");
      }
    }
  }
  ASSIGN_OR_RETURN(Url url, ParseUrl(url_text));
  const std::string origin_host = url.host;
  const int origin_port = url.port;
  HttpGetResult result;
  for (;;) {
    const std::string where = url.ToString();
    ASSIGN_OR_RETURN(auto stream, NetStream::Connect(url.host, url.port, url.tls(), options.timeouts));
    const bool same_origin = url.host == origin_host && url.port == origin_port;
    RETURN_IF_ERROR(stream->WriteAll(BuildRequest(url, options, same_origin)).WithContext(where));
    std::string buf;
    HttpResponseHead head;
    do {  // skip interim 1xx responses
      ASSIGN_OR_RETURN(std::string head_text, ReadHead(*stream, buf, where));
      auto parsed = ParseResponseHead(head_text);
      if (!parsed.ok()) return parsed.status().WithContext(where);
      head = std::move(parsed).value();
    } while (head.status >= 100 && head.status < 200);

    if (options.method == "GET" && IsRedirect(head.status) && head.HasHeader("Location")) {
      if (result.redirects >= options.max_redirects) {
        return Status::InvalidArgument(url_text + ": more than " + std::to_string(options.max_redirects) +
                                       " redirects");
      }
      auto next = ResolveUrl(url, head.Header("Location"));
      if (!next.ok()) return next.status().WithContext(where);
      if (url.tls() && !next->tls()) {
        return Status::InvalidArgument(where + ": refusing a redirect from https to " + next->ToString());
      }
      url = std::move(next).value();
      result.redirect_heads.push_back(std::move(head));
      ++result.redirects;
      continue;
    }

    result.url = where;
    const bool success = head.status >= 200 && head.status < 300;
    Status body;
    if (success) {
      if (options.on_head) RETURN_IF_ERROR(options.on_head(head));
      body = ReadBody(*stream, head, std::move(buf), where, sink);
    } else {
      // Keep the start of an error body for the message; stop reading past it.
      body = ReadBody(*stream, head, std::move(buf), where, [&](std::string_view piece) -> Status {
        size_t room = options.max_error_body - result.error_body.size();
        result.error_body.append(piece.substr(0, room));
        if (piece.size() >= room) return Status::ResourceExhausted("error body truncated");
        return Status::OK();
      });
      if (body.code() == StatusCode::kResourceExhausted || body.code() == StatusCode::kIOError) body = Status::OK();
    }
    RETURN_IF_ERROR(body);
    result.head = std::move(head);
    return result;
  }
}

Result<std::pair<HttpGetResult, std::string>> HttpGetString(const std::string& url, const HttpGetOptions& options,
                                                            size_t max_bytes) {
  std::string body;
  auto r = HttpGet(url, options, [&](std::string_view piece) -> Status {
    if (body.size() + piece.size() > max_bytes) {
      return Status::Corruption(url + ": response larger than " + std::to_string(max_bytes) + " bytes");
    }
    body.append(piece);
    return Status::OK();
  });
  if (!r.ok()) return r.status();
  return std::make_pair(std::move(r).value(), std::move(body));
}

}  // namespace llmhost
