import BlobStream
import BlobStreamCLI
import BlobStreamS3
import Foundation

/// `blobstream upload SOURCE --to s3://bucket/key`: a multipart upload (a single PUT for a
/// source no longer than a part), with a progress line on a terminal and a final line on
/// stderr with bytes, parts, time and rate.
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
        let registry = makeRegistry(
            library: arguments.options.library, skipArchiveVerification: arguments.options.skipArchiveVerification,
            caBundle: arguments.options.caBundle,
            s3: S3SourceSettings(endpointURL: s3.endpointURL, region: s3.region, profile: s3.profile))
        let name = arguments.source
        let url: String
        do {
            url = try checkedSourceURL(name, registry: registry)
        } catch {
            throw failure(name, error)
        }
        let offset = arguments.options.offset
        let source = S3UploadSource(name: name, isRepeatable: UploadArguments.readsOnlyRegularFiles(url)) {
            let source = try registry.makeSource(url: url)
            guard let offset, offset > 0 else { return source }
            return BlobSliceDataSource(upstream: source, offset: offset, length: nil, name: name)
        }
        var options = S3UploadOptions(
            partSize: s3.partSizeBytes, parallelism: s3.parallel, contentType: s3.contentType,
            metadata: s3.metadataPairs, abortsOnFailure: !s3.keepParts)
        if let id = s3.uploadId {
            options.resume = .uploadID(id)
        } else if s3.resume {
            options.resume = .latest
        }
        let started = ContinuousClock.now
        let upload = S3Uploader(client: S3Client(configuration: configuration)).upload(
            source, to: location, options: options)
        // The bar is made with the first report, which knows the total when the source does.
        var bar: ProgressLine?
        for await report in upload.progress {
            if bar == nil { bar = ProgressLine(label: "upload \(name)", total: report.total) }
            bar?.update(report.sent)
        }
        let result: S3UploadResult
        do {
            result = try await upload.result
        } catch let error as S3Error {
            bar?.finish()
            if error.code == .sourceFailed, let cause = error.cause { throw failure(name, cause) }
            throw ToolFailure(message: error.description)
        }
        bar?.finish()
        let elapsed = (ContinuousClock.now - started).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
        let rate = Double(result.size) / max(seconds, 0.001)
        let parts =
            result.parts == 0
            ? "1 request"
            : "\(result.parts) parts" + (result.partsSent < result.parts ? " (\(result.partsSent) sent)" : "")
        FileHandle.standardError.write(
            Data(
                "uploaded \(result.size) bytes (\(ProgressLine.size(result.size))) to \(location) in \(parts), \(String(format: "%.2f", seconds)) s, \(ProgressLine.size(Int64(rate)))/s\n"
                    .utf8))
    }
}
