import ArgumentParser
import BlobStream
import BlobStreamUpload
import Foundation
import Glibc

/// The arguments of `blobstream upload SOURCE --to URL`, and the upload itself with any
/// `UploadClient`: `blobstream` runs it with AsyncHTTPClient, `blobstream-urlsession` (the
/// helper `--client urlsession` hands over to) with URLSession.
package struct UploadArguments: ParsableArguments {
    /// The HTTP clients `--client` names.
    package enum Client: String, ExpressibleByArgument, CaseIterable, Sendable {
        case asynchttpclient, urlsession
    }

    @OptionGroup package var options: SourceOptions

    @Argument(
        help: ArgumentHelp(
            "The source: a URL, a path, PATH!/member, or - for standard input (none with --abort).",
            valueName: "source"))
    package var sourceGiven: String?

    /// The source as given (empty only with `--abort`, which has none).
    package var source: String { sourceGiven ?? "" }

    @Option(help: "Where to send it: an http(s):// URL, or s3://bucket/key for a multipart upload to S3.")
    package var to: String

    @Option(help: "PUT or POST.")
    package var method = "PUT"

    @Option(help: "Send a multipart/form-data body with the source as the file part named FIELD.")
    package var multipart: String?

    @Option(help: "The HTTP client: asynchttpclient or urlsession.")
    package var client: Client = .asynchttpclient

    @Option(parsing: .unconditional, help: "Give up when no connection is made within this many seconds.")
    package var connectTimeout: Double = UploadOptions().connectTimeout.seconds

    @Option(
        parsing: .unconditional,
        help: "Give up when no byte is sent or received for this many seconds (the wait for the answer included).")
    package var idleTimeout: Double = UploadOptions().idleTimeout.seconds

    @OptionGroup(title: "S3 (with --to s3://bucket/key)") package var s3: S3UploadArguments

    package init() {}

    /// True when `--to` names an S3 object.
    package var isS3: Bool { to.hasPrefix("s3://") }

    package func validate() throws {
        guard ["PUT", "POST"].contains(method.uppercased()) else {
            throw ValidationError("--method must be PUT or POST, not \(method)")
        }
        if isS3 {
            try s3.check(destination: to)
            if s3.abort {
                guard sourceGiven == nil else {
                    throw UsageError(
                        description: "--abort ends an unfinished upload and takes no source (\(source) given)")
                }
                guard s3.uploadId != nil else {
                    throw UsageError(description: "--abort needs the --upload-id of the upload to end")
                }
            } else if sourceGiven == nil {
                throw UsageError(description: "name the SOURCE to upload (a path, a URL, or - for standard input)")
            }
            if s3.indexOutput != nil, !s3.buildIndex {
                throw UsageError(description: "--index-output names where --build-index writes: give --build-index")
            }
            if s3.buildIndex, s3.resume || s3.uploadId != nil, source == "-" {
                throw UsageError(
                    description:
                        "--build-index cannot rebuild the index of a resumed upload from standard input (the parts already stored are not read again); upload it whole, or index it after (blobstream index \(to))"
                )
            }
            guard client == .asynchttpclient else {
                throw UsageError(
                    description: "--to s3://… uploads with AsyncHTTPClient only; drop --client \(client.rawValue)")
            }
        } else {
            do {
                _ = try UploadURL.validate(to)
            } catch let error as BlobStreamError {
                // Not a ValidationError: the tool prints one line (no usage block) and exits 2.
                throw UsageError(description: "--to: \(error.message)")
            }
            try s3.checkUnused()
            guard sourceGiven != nil else {
                throw UsageError(description: "name the SOURCE to upload (a path, a URL, or - for standard input)")
            }
        }
        for (name, value) in [("--connect-timeout", connectTimeout), ("--idle-timeout", idleTimeout)]
        where !(value.isFinite && value > 0 && value <= 1e9) {
            throw UsageError(description: "\(name) must be a number of seconds greater than 0, not \(value)")
        }
    }

    /// The limits the options ask for.
    package var uploadOptions: UploadOptions {
        UploadOptions(
            connectTimeout: .nanoseconds(Int64(connectTimeout * 1e9)),
            idleTimeout: .nanoseconds(Int64(idleTimeout * 1e9)))
    }

    @Flag(help: "No progress line and no summary on a terminal.")
    package var quiet = false

    /// Uploads the source with `uploader`, with a progress line on a terminal; a remote
    /// source is read through `remote`, the program's schemes (nil: none).
    package func run(with uploader: any UploadClient, remote: (any DataSourceSchemes)?) async throws {
        if quiet { Console.beQuiet() }
        let registry = makeRegistry(
            library: options.library, skipArchiveVerification: options.skipArchiveVerification, remote: remote,
            inflate: options.inflate, gzipIndexes: options.gzipIndexes)
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
        let bar = ProgressLine(label: "upload \(source)", total: body.length)
        let started = Date()
        let upload = uploader.upload(body, to: to, method: method.uppercased(), options: uploadOptions)
        // The progress line is drawn here, from the upload's progress stream, which ends
        // with the upload.
        var sent: Int64 = 0
        for await report in upload.progress {
            sent = report.sent
            bar.update(report.sent)
        }
        do {
            _ = try await upload.result
        } catch let error as BlobStreamError {
            bar.finish()
            throw ToolFailure(message: error.description)
        }
        bar.finish()
        if Console.showsProgress {
            let seconds = Date().timeIntervalSince(started)
            Console.writeError("uploaded \(ProgressLine.size(sent)) in \(String(format: "%.2f", seconds)) s\n")
        }
    }

    /// True when every file the source URL reads is a regular file, so that a fresh source
    /// gives the whole body again (after a redirect); false for standard input, a pipe, a
    /// FIFO or a device, where what one source read is gone for the next.
    package static func readsOnlyRegularFiles(_ url: String) -> Bool {
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
package struct UsageError: Error, CustomStringConvertible {
    package var description: String
    package init(description: String) { self.description = description }
}
