import ArgumentParser
import BlobStream
import BlobStreamSources
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

    @Flag(
        help:
            "Build the object's index from the bytes as they go out (a tar, a tar.gz or any gzip, a tar.zst or a .zst in many frames: told from the bytes) and write it once the object is whole, bound to it as `index URL` binds it: beside an s3:// object (KEY.blobidx, KEY.gzidx), or where --index-output says (needed for an http(s):// target)."
    )
    package var buildIndex = false

    @Option(help: "With --build-index: write the index here (a path or an s3:// URL) instead of beside the object.")
    package var indexOutput: String?

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
            if buildIndex, s3.resume || s3.uploadId != nil, source == "-" {
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
            if buildIndex {
                // The index is bound to the object read back at --to: a PUT puts it there.
                guard method.uppercased() == "PUT", multipart == nil else {
                    throw UsageError(
                        description:
                            "--build-index indexes the object a PUT stores at --to: drop --method POST and --multipart")
                }
                guard indexOutput != nil else {
                    throw UsageError(
                        description:
                            "--build-index to a web server needs --index-output PATH or s3://… (a web server takes no index beside \(to))"
                    )
                }
                guard client == .asynchttpclient else {
                    throw UsageError(
                        description:
                            "--build-index reads the stored object's identity back with AsyncHTTPClient; drop --client \(client.rawValue)"
                    )
                }
            }
        }
        if indexOutput != nil, !buildIndex {
            throw UsageError(description: "--index-output names where --build-index writes: give --build-index")
        }
        if buildIndex, let indexOutput { try checkIndexOutput(indexOutput) }
        for (name, value) in [("--connect-timeout", connectTimeout), ("--idle-timeout", idleTimeout)]
        where !(value.isFinite && value > 0 && value <= 1e9) {
            throw UsageError(description: "\(name) must be a number of seconds greater than 0, not \(value)")
        }
    }

    /// Refuses, before anything is sent, an `--index-output` that would replace one of the
    /// command's inputs or its object: the object uploaded (`--to`), a source object, the
    /// source file (through any link), or a path that is no new path nor regular file (a
    /// FIFO, a device, a folder).
    private func checkIndexOutput(_ output: String) throws {
        let remote = ["s3", "http", "https"]
        for (named, what) in [(to, "the object uploaded (--to)"), (source, "the source object")]
        where remote.contains(BlobURL.scheme(of: named)?.lowercased() ?? "")
            && BlobSources.namesTheSameObject(output, named)
        {
            throw UsageError(
                description:
                    "cannot write the index to '\(output)': it is \(what), which the index would replace; name another place"
            )
        }
        switch BlobURL.scheme(of: output)?.lowercased() {
        case .some(let scheme) where remote.contains(scheme): return
        case "file":
            _ = try OutputFile(
                try BlobURL.path(ofFileURL: output), role: "the index", inputs: Self.localInputs(of: source))
        default:
            _ = try OutputFile(output, role: "the index", inputs: Self.localInputs(of: source))
        }
    }

    /// The local files a source argument reads: a path, a `file://` URL, `PATH!/member`, or
    /// those inside a composed URL (`gzip:`, `archive:`).
    static func localInputs(of source: String) -> [String] {
        guard source != "-" else { return [] }
        var names = [source]
        if let member = source.range(of: "!/", options: .backwards) {
            names.append(String(source[..<member.lowerBound]))
        }
        var rest = Substring(source)
        while let found = rest.range(of: "file://") {
            let after = rest[found.upperBound...]
            let end = after.range(of: "!/")?.lowerBound ?? after.endIndex
            let encoded = String(after[..<end])
            names.append(URL(string: "file://" + encoded)?.path ?? encoded)
            rest = after[end...]
        }
        return names
    }

    /// The limits the options ask for.
    package var uploadOptions: UploadOptions {
        UploadOptions(
            connectTimeout: .nanoseconds(Int64(connectTimeout * 1e9)),
            idleTimeout: .nanoseconds(Int64(idleTimeout * 1e9)))
    }

    @Flag(
        help:
            "No progress line and no summary on a terminal; for s3://, neither the multipart upload's id nor the final line (an error still says everything, an interrupted upload its id)."
    )
    package var quiet = false

    /// Uploads the source with `uploader`, with a progress line on a terminal; a remote
    /// source is read through `remote`, the program's schemes (nil: none).
    package func run(with uploader: any UploadClient, remote: (any DataSourceSchemes)?) async throws {
        let registry = makeRegistry(
            library: options.library, skipArchiveVerification: options.skipArchiveVerification, remote: remote,
            inflate: options.inflate, gzipIndexes: options.gzipIndexes, zstdWindowLog: options.zstdWindowLog)
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
        // --build-index: the index is built from the bytes as they go out (a file's by a
        // reading of its own beside the upload).
        let indexing = buildIndex ? UploadIndexing(body: body, name: to) : nil
        let bar = ProgressLine(label: "upload \(source)", total: body.length, quiet: quiet)
        let started = Date()
        let upload = uploader.upload(
            indexing?.body ?? body, to: to, method: method.uppercased(), options: uploadOptions)
        // The progress line is drawn here, from the upload's progress stream, which ends
        // with the upload.
        var sent: Int64 = 0
        for await report in upload.progress {
            sent = report.sent
            bar.update(report.sent)
        }
        let stored: UploadResult
        do {
            stored = try await upload.result
        } catch {
            indexing?.cancel()
            bar.finish()
            throw (error as? BlobStreamError).map { ToolFailure(message: $0.description) } ?? error
        }
        bar.finish()
        if Console.stderrIsTerminal && !quiet {
            let seconds = Date().timeIntervalSince(started)
            Console.writeError("uploaded \(ProgressLine.size(sent)) in \(String(format: "%.2f", seconds)) s\n")
        }
        if let indexing { try await keepIndex(indexing, stored: stored, sources: BlobSources(remote: remote)) }
    }

    /// Binds the index built during the upload to the object stored at `--to` (read back
    /// through `sources`; the upload's own answer, `stored`, says which object that is) and
    /// writes it beside it or at `--index-output`; prints where on
    /// stdout (as `index` does), or warns why there is none.
    package func keepIndex(_ indexing: UploadIndexing, stored: UploadResult, sources: BlobSources) async throws {
        var sources = sources
        sources.indexKey = sources.indexKey ?? IndexKeySetting.current // sealed with the run's key, when set
        do {
            switch try await indexing.finish(objectAt: to, stored: stored, sources: sources, at: indexOutput) {
            case .kept(let kept):
                let lines = kept.map { "\($0.location)\t\($0.contents)\t\($0.byteCount) bytes\n" }.joined()
                try Array(lines.utf8).withUnsafeBytes { try Console.writeOut($0) }
            case .notIndexed(let reason):
                Console.writeError("blobstream: warning: \(reason)\n")
            }
        } catch {
            throw ToolFailure(
                message:
                    "\(to) was uploaded whole, but its index was not written: \((error as? BlobStreamError)?.message ?? "\(error)")"
            )
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
