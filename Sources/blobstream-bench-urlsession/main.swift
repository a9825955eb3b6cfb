// blobstream-bench-urlsession FILE URL: the reference for `make bench`'s U2 row: FILE PUT to
// URL with URLSession's own uploadTask(fromFile:), which reads the file itself.
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("blobstream-bench-urlsession: \(message)\n".utf8))
    exit(1)
}

func uploadFromFile(_ path: String, to url: String) -> String {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = "PUT"
    let done = DispatchSemaphore(value: 0)
    final class Result: @unchecked Sendable { var text = "" }
    let result = Result()
    let task = URLSession.shared.uploadTask(with: request, fromFile: URL(fileURLWithPath: path)) { _, response, error in
        if let error {
            result.text = "error: \(error)"
        } else {
            result.text = "status=\((response as? HTTPURLResponse)?.statusCode ?? 0)"
        }
        done.signal()
    }
    task.resume()
    done.wait()
    if !result.text.hasPrefix("status=2") { fail(result.text) }
    return result.text
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count == 2 else { fail("usage: blobstream-bench-urlsession FILE URL") }
print(uploadFromFile(arguments[0], to: arguments[1]))
