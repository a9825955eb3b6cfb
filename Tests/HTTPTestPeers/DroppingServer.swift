import Foundation

extension SocketPeer {
    /// A server of an object of `length` deterministic bytes (byte i is i % 251) that
    /// answers each ranged GET with the right head (206, `Content-Range`, `Content-Length`,
    /// a fixed strong ETag) but sends only the first half of the body, then closes the
    /// connection.
    public static func droppingServer(length: Int) throws -> SocketPeer {
        try SocketPeer { connection in
            guard let head = try await connection.readHead() else { return }
            var (first, last) = (0, length - 1)
            if let range = head.headerValue("range"), range.hasPrefix("bytes=") {
                let bounds = range.dropFirst(6).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
                first = Int(bounds[0]) ?? 0
                last =
                    bounds.count > 1 && !bounds[1].isEmpty ? min(Int(bounds[1]) ?? length - 1, length - 1) : length - 1
            }
            let body = first <= last ? (first...last).map { UInt8($0 % 251) } : []
            try await connection.write(
                "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(first)-\(last)/\(length)\r\n"
                    + "Content-Length: \(body.count)\r\nETag: \"fixed\"\r\n\r\n")
            try await connection.write(body.prefix(body.count / 2))
            await connection.close()
        }
    }
}

extension String {
    /// The value of the header `name` (any case) in this HTTP head, trimmed; nil when absent.
    func headerValue(_ name: String) -> String? {
        for line in split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            if line[..<colon].trimmingCharacters(in: .whitespaces).lowercased() == name.lowercased() {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }
}
