// blobstream-bench-asynchttpclient: AsyncHTTPClient alone, the floor of a download through it,
// for `scripts/bench-s3` (row S3D).
//
//   blobstream-bench-asynchttpclient URL|@FILE SIZE [RANGES]
//
// (`@FILE`: the URL is FILE's first line, as a presigned URL kept in a file.)
// Sends RANGES (4) GETs of URL at once, each for one RANGES-th of its SIZE bytes (`Range:
// bytes=a-b`), through `HTTPClient.shared` and the delegate API (no async sequence), and
// writes each body part to stdout as it comes, unordered: what four `curl -r` into one pipe
// do, with nothing of BlobStream's (no blocks, no order, no checks). Fails on any answer but
// 206 with the bytes asked for.
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("blobstream-bench-asynchttpclient: \(message)\n".utf8))
    exit(1)
}

/// Writes each body part to stdout on the event loop it arrives on; counts the bytes.
final class WritingDelegate: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Int
    /// Touched only on the request's event loop (AsyncHTTPClient calls a delegate there).
    private var count = 0
    private var status: UInt = 0

    func didReceiveHead(task: HTTPClient.Task<Int>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        status = head.status.code
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Int>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        buffer.withUnsafeReadableBytes { bytes in
            var done = 0
            while done < bytes.count {
                let n = write(1, bytes.baseAddress! + done, bytes.count - done)
                if n <= 0 { fail("stdout: \(String(cString: strerror(errno)))") }
                done += n
            }
        }
        count += buffer.readableBytes
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Int>) throws -> Int {
        guard status == 206 else { fail("answered \(status), not 206") }
        return count
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2 || arguments.count == 3, let size = Int64(arguments[1]), size > 0,
    let ranges = arguments.count == 3 ? Int64(arguments[2]) : 4, ranges > 0
else { fail("usage: blobstream-bench-asynchttpclient URL|@FILE SIZE [RANGES]") }
var url = arguments[0]
if url.hasPrefix("@") {
    guard let text = try? String(contentsOfFile: String(url.dropFirst()), encoding: .utf8),
        let line = text.split(separator: "\n").first
    else { fail("cannot read a URL from \(url.dropFirst())") }
    url = String(line)
}
let each = (size + ranges - 1) / ranges
var tasks: [HTTPClient.Task<Int>] = []
for k in 0..<ranges {
    let start = k * each
    let end = min(start + each, size) - 1
    guard start <= end else { break }
    var request: HTTPClient.Request
    do {
        request = try HTTPClient.Request(url: url)
    } catch {
        fail("\(url): \(error)")
    }
    request.headers.add(name: "Range", value: "bytes=\(start)-\(end)")
    tasks.append(HTTPClient.shared.execute(request: request, delegate: WritingDelegate()))
}
var total: Int64 = 0
for task in tasks {
    do {
        total += Int64(try task.wait())
    } catch {
        fail("\(url): \(error)")
    }
}
guard total == size else { fail("\(url): \(total) bytes, not \(size)") }
