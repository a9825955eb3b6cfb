import BlobStream
import BlobStreamCLI
import BlobStreamHTTPClient
import BlobStreamS3
import BlobStreamSources
import Foundation

/// `blobstream upload SOURCE --to s3://bucket/key`: a multipart upload (a single PUT for a
/// source no longer than a part), with a progress line on a terminal and a final line on
/// stderr with bytes, parts, time and rate. HTTPS as for `s3://` reads: `--ca-bundle` (or
/// `AWS_CA_BUNDLE`, `SSL_CERT_FILE`) adds trust roots, `HTTPS_PROXY`/`HTTP_PROXY` and
/// `NO_PROXY` choose the proxy. A failure that leaves the multipart upload on the store names
/// it and the commands that resume or end it; `--abort --upload-id ID` ends one.
enum S3UploadCommand {
    static func run(_ arguments: UploadArguments) async throws {
        let s3 = arguments.s3
        let location: S3Location
        let configuration: S3Configuration
        do {
            location = try S3Location(url: arguments.to)
            configuration = try S3Configuration.resolve(
                profile: s3.profile, region: s3.region, endpointURL: s3.endpointURL)
        } catch {
            throw ToolFailure(message: "--to \(arguments.to): \(error.description)")
        }
        // The run's one pool: the upload, its source (when remote) and the index read back.
        let connections = RunConnections(caBundle: arguments.options.caBundle)
        if s3.abort {
            return try await abortUpload(
                s3.uploadId ?? "", of: location, configuration: configuration, arguments: arguments,
                connections: connections)
        }
        let remote = connections.remote(
            s3: S3SourceSettings(endpointURL: s3.endpointURL, region: s3.region, profile: s3.profile))
        let registry = makeRegistry(
            library: arguments.options.library, skipArchiveVerification: arguments.options.skipArchiveVerification,
            remote: remote)
        let url: String
        do {
            url = try checkedSourceURL(arguments.source, registry: registry)
        } catch {
            throw failure(arguments.source, error)
        }
        let name = arguments.source == "-" ? "standard input" : arguments.source
        let offset = arguments.options.offset
        let body = UploadBody(length: nil, repeatable: UploadArguments.readsOnlyRegularFiles(url), name: name) {
            let source = try registry.makeSource(url: url)
            guard let offset, offset > 0 else { return source }
            return BlobSliceDataSource(upstream: source, offset: offset, length: nil, name: name)
        }
        // --build-index: the index is built from the bytes as they go out (a pipe's as the
        // upload reads them, a file's by a reading of its own beside the upload).
        let indexing = arguments.buildIndex ? UploadIndexing(body: body, name: arguments.to) : nil
        var options = S3UploadOptions(
            partSize: s3.partSizeBytes, parallelism: s3.parallel, contentType: s3.contentType,
            metadata: s3.metadataPairs, abortsOnFailure: !s3.keepParts)
        options.checksumAlgorithm = s3.checksumAlgorithm.flatMap { S3ChecksumAlgorithm(name: $0) }
        // awscli's setting: when_supported (its default) or when_required.
        if ProcessInfo.processInfo.environment["AWS_REQUEST_CHECKSUM_CALCULATION"]?.lowercased() == "when_required" {
            options.checksumCalculation = .whenRequired
        }
        options.bodyCheck = s3.bodyCheck == "auto" ? .automatic : S3BodyCheck(rawValue: s3.bodyCheck) ?? .automatic
        options.cacheControl = s3.cacheControl
        options.contentDisposition = s3.contentDisposition
        options.contentEncoding = s3.contentEncoding
        options.storageClass = s3.storageClass
        options.serverSideEncryption = s3.sse
        options.tagging = s3.tagging
        if let id = s3.uploadId {
            options.resume = .uploadID(id)
        } else if s3.resume {
            // The store's listing may lag (asked again while empty); several unfinished
            // uploads of the key are listed for the user to choose, never guessed.
            options.resume = .latest
            options.resumeLookup.whenSeveral = .refuse
        }
        // The id goes to stderr at once, so that an upload killed mid-way can be resumed.
        let uploadID = StartedUploadID()
        let resuming = options.resume != .no
        options.uploadStarted = { id in
            uploadID.value.withLock { $0 = id }
            // --quiet: nothing unless something fails (an interrupted upload still names its id).
            guard !arguments.quiet else { return }
            // On a terminal, over the progress bar (redrawn at its next update).
            let clear = Console.stderrIsTerminal ? "\r\u{1B}[K" : ""
            let line = "\(resuming ? "continuing" : "started") multipart upload \(id) of \(location)\n"
            Console.writeError(clear + line)
        }
        let leftOpen = StartedUploadID()
        options.uploadLeftOpen = { id in leftOpen.value.withLock { $0 = id } }
        let client = try Self.client(configuration, arguments: arguments, connections: connections)
        let outcome: Result<UploadResult, any Error>
        do {
            outcome = .success(
                try await run(
                    indexing?.body ?? body, to: location, options: options, client: client, quiet: arguments.quiet))
        } catch is Interrupted {
            // Ctrl-C: the upload was cancelled, and aborted unless that failed (or --keep-parts).
            let started = uploadID.value.withLock { $0 }
            let line: String
            if let id = leftOpen.value.withLock({ $0 }) {
                let resume = OpenUploadCommands.resume(arguments, uploadID: id)
                let abort = OpenUploadCommands.abort(arguments, uploadID: id)
                line =
                    "interrupted: multipart upload \(id) of \(location) is left open on the store: resume it with `\(resume)`, or abort it with `\(abort)`"
            } else if let id = started {
                line = "interrupted: multipart upload \(id) of \(location) aborted, its parts are gone"
            } else {
                line = "interrupted: nothing was uploaded to \(location)"
            }
            outcome = .failure(ToolFailure(message: line))
        } catch let error as BlobStreamError where error.s3UploadID != nil {
            // Work left on the store (the abort failed, or --keep-parts): the line names the
            // upload and both ways out.
            let id = error.s3UploadID ?? ""
            let resume = OpenUploadCommands.resume(arguments, uploadID: id)
            let abort = OpenUploadCommands.abort(arguments, uploadID: id)
            outcome = .failure(
                ToolFailure(message: "\(error.description): resume it with `\(resume)`, or abort it with `\(abort)`"))
        } catch let error as BlobStreamError where error.code == .invalidConfiguration {
            // A part size the source cannot take (a pipe's parts are held in memory).
            outcome = .failure(UsageError(description: "--part-size \(s3.partSize): \(error.message)"))
        } catch {
            outcome = .failure(error)
        }
        if case .failure = outcome { indexing?.cancel() }
        let stored = try outcome.get()
        if let indexing {
            try await arguments.keepIndex(indexing, stored: stored, sources: BlobSources(remote: remote))
        }
    }

    /// The S3 client of the upload: the store `configuration` names, over the run's pool.
    private static func client(
        _ configuration: S3Configuration, arguments: UploadArguments, connections: RunConnections
    ) throws -> S3Client {
        do {
            return try S3Client(configuration: configuration, pool: connections.pool)
        } catch {
            throw ToolFailure(message: "--to \(arguments.to): \(error.description)")
        }
    }

    /// `--abort --upload-id ID`: ends the unfinished upload, one line saying so.
    private static func abortUpload(
        _ id: String, of location: S3Location, configuration: S3Configuration, arguments: UploadArguments,
        connections: RunConnections
    ) async throws {
        let client = try Self.client(configuration, arguments: arguments, connections: connections)
        let outcome: Result<Void, any Error>
        do {
            try await client.abortMultipartUpload(location, uploadID: id)
            outcome = .success(())
        } catch let error as BlobStreamError where error.s3ErrorCode == "NoSuchUpload" {
            outcome = .failure(
                ToolFailure(
                    message:
                        "no unfinished upload \(id) of \(location) to abort (it was completed or aborted, or the id is wrong): \(error.description)"
                ))
        } catch let error as BlobStreamError {
            outcome = .failure(ToolFailure(message: error.description))
        } catch {
            outcome = .failure(error)
        }
        try outcome.get()
        Console.writeError("aborted multipart upload \(id) of \(location): its parts are gone\n")
    }

    /// Runs the upload with `client`, showing its progress, then its final line.
    private static func run(
        _ body: UploadBody, to location: S3Location, options: S3UploadOptions, client: S3Client, quiet: Bool
    ) async throws -> UploadResult {
        let name = body.name ?? location.description
        let started = ContinuousClock.now
        let upload = S3Uploader(client: client).upload(body, to: location, options: options)
        // Ctrl-C cancels the upload, which aborts it (or says that it is left open); a second
        // one ends the tool at once.
        signal(SIGINT, SIG_IGN)
        let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        let interrupts = InterruptCount()
        interrupt.setEventHandler {
            guard
                interrupts.value.withLock({
                    $0 += 1
                    return $0
                }) == 1
            else {
                signal(SIGINT, SIG_DFL)
                raise(SIGINT)
                return
            }
            upload.cancel()
        }
        interrupt.resume()
        defer {
            interrupt.cancel()
            signal(SIGINT, SIG_DFL)
        }
        // The bar is made with the first report, which knows the total when the source does.
        var bar: ProgressLine?
        for await report in upload.progress {
            if bar == nil { bar = ProgressLine(label: "upload \(name)", total: report.total, quiet: quiet) }
            bar?.update(report.sent)
        }
        let result: UploadResult
        do {
            result = try await upload.result
        } catch is CancellationError {
            bar?.finish()
            throw Interrupted()
        } catch let error as BlobStreamError {
            bar?.finish()
            // The caller words an error that leaves an upload open or names a setting.
            if error.s3UploadID != nil || error.code == .invalidConfiguration { throw error }
            if error.code == .sourceFailed, let cause = error.s3Cause { throw failure(name, cause) }
            throw ToolFailure(message: error.description)
        }
        bar?.finish()
        let elapsed = (ContinuousClock.now - started).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        let size = result.objectSize ?? result.bytesSent
        let rate = Double(size) / max(seconds, 0.001)
        let parts =
            result.parts == 0
            ? "1 request"
            : "\(result.parts) parts" + (result.partsSent < result.parts ? " (\(result.partsSent) sent)" : "")
        guard !quiet else { return result }
        Console.writeError(
            "uploaded \(size) bytes (\(ProgressLine.size(size))) to \(location) in \(parts), \(String(format: "%.2f", seconds)) s, \(ProgressLine.size(Int64(rate)))/s\(checksumNote(result, asked: options.checksumAlgorithm))\(sourceNote(result))\n"
        )
        return result
    }

    /// `, CRC32C <base64> (hex <hex>)` for the S3 checksum the store keeps; for one asked for
    /// that the store took without keeping, the value computed here and that the store keeps
    /// none. Then, for every S3 upload, `, CRC64NVME <base64> (hex <hex>…)`: the whole
    /// object's CRC-64/NVME, said to be computed here unless the store gave it back. The hex
    /// form (of a whole-object CRC) is what `blobstream checksum -a crc64nvme` (or `crc32`,
    /// `crc32c`) prints for the same bytes.
    private static func checksumNote(_ result: UploadResult, asked: S3ChecksumAlgorithm?) -> String {
        let keptNone = "computed here: the store keeps no S3 checksum"
        var note = ""
        let algorithm = result.checksumAlgorithm
        if let algorithm, algorithm != "CRC64NVME", let value = result.checksum {
            let hex = hexOfCRC(value, algorithm: algorithm).map { "hex \($0)" }
            if result.checksumStored {
                note += ", \(algorithm) \(value)" + (hex.map { " (\($0))" } ?? "")
            } else if asked != nil {
                note += ", \(algorithm) \(value) (\(((hex.map { [$0] } ?? []) + [keptNone]).joined(separator: "; ")))"
            }
        }
        let sentCRC64 = algorithm == "CRC64NVME" ? result.checksum : nil
        guard let crc64 = sentCRC64 ?? result.crc64nvme else { return note }
        let kept = sentCRC64 != nil && result.checksumStored
        let source: String? = kept ? nil : sentCRC64 != nil && asked != nil ? keptNone : "computed here"
        let notes = [hexOfCRC(crc64, algorithm: "CRC64NVME").map { "hex \($0)" }, source].compactMap { $0 }
        return note + ", CRC64NVME \(crc64) (\(notes.joined(separator: "; ")))"
    }

    /// `, copy checked against the store's FULL_OBJECT CRC64NVME <base64> …` or `, copy
    /// unchecked: <why>` for a copy of an object read from a server (`s3://`, `https://`):
    /// whether its bytes were checked against the checksum the source's store keeps. Nothing
    /// for any other source (a file).
    private static func sourceNote(_ result: UploadResult) -> String {
        result.sourceCheck.map { ", copy \($0)" } ?? ""
    }

    /// The hex digits of a whole-object CRC given in base64 (big-endian, as S3 shows it);
    /// nil for a composite value (`…-N`) or another algorithm.
    static func hexOfCRC(_ base64: String, algorithm: String) -> String? {
        let width = ["CRC32": 4, "CRC32C": 4, "CRC64NVME": 8][algorithm]
        guard let width, !base64.contains("-"), let bytes = Data(base64Encoded: base64), bytes.count == width else {
            return nil
        }
        return bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// The upload was cancelled by Ctrl-C.
private struct Interrupted: Error {}

/// How many times Ctrl-C was pressed during the upload.
private final class InterruptCount: Sendable {
    let value = Locked(0)
}

/// The id of the multipart upload an upload started or found (or left open), once known.
private final class StartedUploadID: Sendable {
    let value = Locked<String?>(nil)
}
