import ArgumentParser
import AsyncHTTPClient
import BlobStream
import BlobstreamCLI
import BlobStreamHTTPClient
import BlobStreamNetworking
import Foundation
import NIOHTTP1

/// `blobstream upload SOURCE --to URL`: streams a source to an HTTP server, with its length
/// when known, and a progress bar on a terminal.
struct Upload: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Upload SOURCE to an HTTP server (PUT by default), streamed, with no temporary files.")

    enum Client: String, ExpressibleByArgument, CaseIterable {
        case asynchttpclient, urlsession
    }

    @OptionGroup var options: SourceOptions

    @Argument(help: "The source: a URL, a path, PATH!/member, or - for standard input.")
    var source: String

    @Option(help: "Where to send it.")
    var to: String

    @Option(help: "PUT or POST.")
    var method = "PUT"

    @Option(help: "Send a multipart/form-data body with the source as the file part named FIELD.")
    var multipart: String?

    @Option(help: "The HTTP client: asynchttpclient or urlsession.")
    var client: Client = .asynchttpclient

    func validate() throws {
        guard ["PUT", "POST"].contains(method.uppercased()) else {
            throw ValidationError("--method must be PUT or POST, not \(method)")
        }
        guard let url = URL(string: to), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw ValidationError("--to must be an http:// or https:// URL, not '\(to)'")
        }
    }

    func run() async throws {
        let registry = makeRegistry(library: options.library, skipArchiveVerification: options.skipArchiveVerification)
        let url = sourceURL(source, registry: registry)
        var body: UploadBody
        do {
            body = try UploadBody.probingLength { try registry.makeSource(url: url) }
            if let offset = options.offset { body = try body.starting(at: offset) }
        } catch {
            throw failure(source, error)
        }
        if let field = multipart {
            var form = MultipartBody()
            let filename = (source as NSString).lastPathComponent
            form.addFile(name: field, filename: filename.isEmpty ? "upload" : filename, body: body)
            body = form.uploadBody
        }
        let bar = ProgressBox(ProgressLine(label: "upload \(source)", total: body.length))
        let progress: @Sendable (UploadProgress) -> Void = { bar.update($0) }
        let started = Date()
        do {
            switch client {
            case .asynchttpclient:
                _ = try await HTTPClientUpload.upload(
                    body, to: to, method: HTTPMethod(rawValue: method.uppercased()), progress: progress)
            case .urlsession:
                _ = try await URLSessionUpload.upload(body, to: URL(string: to)!, method: method.uppercased(), progress: progress)
            }
        } catch let error as BlobStreamError {
            bar.finish()
            throw ToolFailure(message: error.description)
        }
        bar.finish()
        let sent = bar.sent
        if Console.stderrIsTerminal {
            let seconds = Date().timeIntervalSince(started)
            FileHandle.standardError.write(Data("uploaded \(ProgressLine.size(sent)) in \(String(format: "%.2f", seconds)) s\n".utf8))
        }
    }
}

/// Shares the progress line with the upload's threads. Unchecked Sendable: guarded by `lock`.
final class ProgressBox: @unchecked Sendable {
    private let lock = NSLock()
    private let line: ProgressLine
    private var _sent: Int64 = 0
    init(_ line: ProgressLine) { self.line = line }
    var sent: Int64 { lock.withLock { _sent } }
    func update(_ p: UploadProgress) {
        lock.withLock {
            _sent = p.sent
            line.update(p.sent)
        }
    }
    func finish() { lock.withLock { line.finish() } }
}
