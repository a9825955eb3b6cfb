import Foundation

extension PythonPeer {
    /// The validator a `changingServer` sends with each version of its file.
    public enum Validator: String, CaseIterable, Sendable, CustomStringConvertible {
        /// A weak ETag (`W/"a"`, then `W/"b"`), which `If-Match` cannot use.
        case weakETag
        /// Only `Last-Modified` (a date for each version); `If-Unmodified-Since` is ignored.
        case lastModifiedOnly
        /// Neither ETag nor Last-Modified.
        case none
        /// A strong ETag (`"a"`, then `"b"`); `If-Match` is honoured (412 when it differs).
        case strongETag

        /// The case's name, as test arguments print it.
        public var description: String { rawValue }
    }

    /// A server of one file that changes after the first request: the first request gets
    /// version A (`versionA`, a file), every later one version B, each with `validator`.
    /// It answers `Range: bytes=F-L` and `bytes=F-` (206), no `Range` (200), a range past
    /// the end (416), on kept-alive connections, and records each request in the file
    /// `requests` as `RANGE|IF-MATCH|IF-UNMODIFIED-SINCE` (`-` for a header not sent).
    public static func changingServer(versionA: URL, versionB: URL, validator: Validator) throws -> PythonPeer {
        try PythonPeer(
            script: prologue + "\n" + #"""
                versions = [open(sys.argv[3], "rb").read(), open(sys.argv[4], "rb").read()]
                validator = sys.argv[5]
                lock = threading.Lock()
                count = [0]
                def answer(conn, head):
                    lines = head.split("\r\n")
                    headers = {}
                    for line in lines[1:]:
                        name, _, value = line.partition(":")
                        headers[name.strip().lower()] = value.strip()
                    with lock:
                        count[0] += 1
                        which = 0 if count[0] == 1 else 1
                        with open(os.path.join(sys.argv[2], "requests"), "a") as f:
                            f.write("|".join(headers.get(k, "-") for k in ("range", "if-match", "if-unmodified-since")) + "\n")
                    body = versions[which]
                    extra = ""
                    if validator == "weakETag":
                        extra = 'ETag: W/"%s"\r\n' % "ab"[which]
                    elif validator == "strongETag":
                        extra = 'ETag: "%s"\r\n' % "ab"[which]
                    elif validator == "lastModifiedOnly":
                        extra = "Last-Modified: %s\r\n" % ["Mon, 02 Nov 2026 10:00:00 GMT", "Tue, 03 Nov 2026 11:00:00 GMT"][which]
                    if validator == "strongETag" and "if-match" in headers and headers["if-match"] != '"%s"' % "ab"[which]:
                        conn.sendall(("HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n%s\r\n" % extra).encode())
                        return
                    spec = headers.get("range")
                    if spec is None:
                        conn.sendall(("HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n" % (len(body), extra)).encode())
                        conn.sendall(body)
                        return
                    a, _, b = spec[6:].partition("-")
                    first = int(a)
                    last = min(int(b), len(body) - 1) if b else len(body) - 1
                    if first >= len(body):
                        conn.sendall(("HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */%d\r\n"
                                      "Content-Length: 0\r\n%s\r\n" % (len(body), extra)).encode())
                        return
                    part = body[first : last + 1]
                    conn.sendall(("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes %d-%d/%d\r\n"
                                  "Content-Length: %d\r\n%s\r\n" % (first, last, len(body), len(part), extra)).encode())
                    conn.sendall(part)
                def serve(conn):
                    try:
                        while True:
                            head = read_head(conn)
                            if head is None:
                                break
                            answer(conn, head)
                    except OSError:
                        pass
                    conn.close()
                server = listen()
                while True:
                    conn, _ = server.accept()
                    threading.Thread(target=serve, args=(conn,), daemon=True).start()
                """#, arguments: [versionA.path, versionB.path, validator.rawValue])
    }
}
