import ArgumentParser
import AsyncHTTPClient
import BlobStream
import BlobStreamCLI
import BlobStreamHTTPClient
import BlobStreamNetworking
import Foundation
import Glibc
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

    @Option(parsing: .unconditional, help: "Give up when no connection is made within this many seconds.")
    var connectTimeout: Double = UploadOptions().connectTimeout.seconds

    @Option(
        parsing: .unconditional,
        help: "Give up when no byte is sent or received for this many seconds (the wait for the answer included).")
    var idleTimeout: Double = UploadOptions().idleTimeout.seconds

    func validate() throws {
        guard ["PUT", "POST"].contains(method.uppercased()) else {
            throw ValidationError("--method must be PUT or POST, not \(method)")
        }
        do {
            _ = try UploadURL.validate(to)
        } catch let error as BlobStreamError {
            // Not a ValidationError: the tool prints one line (no usage block) and exits 2.
            throw UsageError(description: "--to: \(error.message)")
        }
        for (name, value) in [("--connect-timeout", connectTimeout), ("--idle-timeout", idleTimeout)]
        where !(value.isFinite && value > 0 && value <= 1e9) {
            throw UsageError(description: "\(name) must be a number of seconds greater than 0, not \(value)")
        }
    }

    /// The limits the options ask for.
    var uploadOptions: UploadOptions {
        UploadOptions(
            connectTimeout: .nanoseconds(Int64(connectTimeout * 1e9)),
            idleTimeout: .nanoseconds(Int64(idleTimeout * 1e9)))
    }

    func run() async throws {
        let registry = makeRegistry(library: options.library, skipArchiveVerification: options.skipArchiveVerification)
        let url = sourceURL(source, registry: registry)
        var body: UploadBody
        do {
            body = try UploadBody.probingLength(repeatable: Self.readsOnlyRegularFiles(url)) {
                try registry.makeSource(url: url)
            }
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
                    body, to: to, method: HTTPMethod(rawValue: method.uppercased()), options: uploadOptions,
                    progress: progress)
            case .urlsession:
                _ = try await URLSessionUpload.upload(
                    body, to: try UploadURL.validate(to), method: method.uppercased(), options: uploadOptions,
                    progress: progress)
            }
        } catch let error as BlobStreamError {
            bar.finish()
            throw ToolFailure(message: error.description)
        }
        bar.finish()
        let sent = bar.sent
        if Console.stderrIsTerminal {
            let seconds = Date().timeIntervalSince(started)
            FileHandle.standardError.write(
                Data("uploaded \(ProgressLine.size(sent)) in \(String(format: "%.2f", seconds)) s\n".utf8))
        }
    }
}

extension Upload {
    /// True when every file the source URL reads is a regular file, so that a fresh source
    /// gives the whole body again (after a redirect); false for standard input, a pipe, a
    /// FIFO or a device, where what one source read is gone for the next.
    static func readsOnlyRegularFiles(_ url: String) -> Bool {
        var rest = Substring(url)
        while let found = rest.range(of: "file://") {
            let after = rest[found.upperBound...]
            let end = after.range(of: "!/")?.lowerBound ?? after.endIndex
            let encoded = String(after[..<end])
            let path = URL(string: "file://" + encoded)?.path ?? encoded
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
            rest = after[end...]
        }
        return true
    }
}

/// A usage error reported in one line (ArgumentParser adds the usage block only to a
/// `ValidationError`).
struct UsageError: Error, CustomStringConvertible {
    var description: String
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
