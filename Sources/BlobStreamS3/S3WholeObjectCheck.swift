import AsyncHTTPClient
import BlobStream
import BlobStreamHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Checks a read of an S3 object whole, from its first byte to its end, against the
/// `FULL_OBJECT` checksum the store keeps of it (a CRC-64/NVME, CRC-32 or CRC-32C: S3 keeps
/// CRC-64/NVME for every object uploaded without a checksum): a wrong byte fails the read at
/// its end, naming both values, instead of a clean end.
///
/// - The checksum comes from a `HEAD` with `x-amz-checksum-mode: ENABLED`, sent when the
///   first byte is handed out, on the source's own client and event loops (never the
///   cooperative pool), for an object larger than `smallestChecked`: a smaller one's `HEAD`
///   would double its requests. The `HEAD` is hedged as the source's GETs are
///   (`HTTPHedging.execute`): one held by a node that hangs would hold the read's end (and
///   its bytes in three CRCs) for the proxy's node timeout.
/// - Until the `HEAD` answers, the bytes go through the three CRCs a full-object checksum
///   can be; then through its own only, or none.
/// - A `COMPOSITE` checksum (`…-N`: the checksum of the parts' checksums) cannot be combined
///   without the parts' sizes: the read is unchecked, and `note` says so. So is a read whose
///   `HEAD` failed, whose store keeps no checksum (OpenStack Swift's s3api) or only a SHA-1
///   or SHA-256 of the whole object (a read computes only the CRCs), or whose object changed
///   (another ETag) before the `HEAD`.
/// - A copy in parts reads the object in ranges, none of them whole: it awaits the same
///   `HEAD` (`question`) and compares the parts' CRCs, combined, with the value before it
///   completes (`S3MultipartUpload.checkSource`).
final class S3WholeObjectCheck: HTTPWholeObjectCheck {
    /// The smallest object checked: 8 MiB, the first GET's block.
    static let smallestChecked: Int64 = 8 << 20
    /// The longest the end of a read waits for the `HEAD`'s answer.
    static let answerWait: TimeAmount = .seconds(30)

    /// The `HEAD`'s outcome, set on an event loop (which wakes a `finish` waiting for it).
    private let answer = Locked<Result<HTTPClient.Response, any Error>?>(nil)
    private let name: String
    private let etag: String?
    /// The `HEAD`, to be awaited where the bytes are not read in order (a copy in parts).
    let question: S3KeptChecksumQuestion
    /// The CRCs of the bytes so far: the three candidates until the `HEAD` answers.
    private var sums: [S3Checksum] = [S3Checksum(.crc64nvme), S3Checksum(.crc32c), S3Checksum(.crc32)]
    /// The checksum the store keeps, once the `HEAD` answered with a full-object one.
    private var kept: (algorithm: S3ChecksumAlgorithm, value: String)?
    /// True once the `HEAD`'s answer narrowed `sums`.
    private var narrowed = false
    /// Why the read is unchecked, once known.
    private var unchecked: String?
    private(set) var note: String?

    /// A check for the object `name` (`s3://bucket/key`) with `facts`; its `HEAD` goes out
    /// at once through `client`, hedged by `hedging` (nil: one `HEAD`).
    init(name: String, facts: HTTPObjectFacts, head: HTTPClient.Request, client: HTTPClient, hedging: HTTPHedging?) {
        self.name = name
        self.etag = facts.etag
        let answer = self.answer
        let deadline = NIODeadline.now() + Self.answerWait
        let asked =
            hedging?.execute(head, with: client, deadline: deadline)
            ?? client.execute(request: head, deadline: deadline)
        question = S3KeptChecksumQuestion(name: name, etag: facts.etag, head: asked)
        asked.whenComplete { result in
            answer.withLock { $0 = result.mapError { $0 } }
        }
    }

    func update(_ bytes: UnsafeRawBufferPointer) {
        if !narrowed, let result = answer.withLock({ $0 }) { narrow(result) }
        for index in sums.indices { sums[index].update(bytes) }
    }

    func finish() -> BlobStreamError? {
        if !narrowed {
            let result = answer.withLock(
                when: { $0 != nil }, before: Date(timeIntervalSinceNow: Self.answerWait.seconds)
            ) { result, _ in result }
            narrow(result ?? .failure(HTTPClientError.deadlineExceeded))
        }
        guard let kept, let sum = sums.first else {
            note = "unchecked: \(unchecked ?? "no checksum")"
            return nil
        }
        if sum.base64 == kept.value {
            note = "checked against the store's FULL_OBJECT \(kept.algorithm.rawValue) \(kept.value)"
            return nil
        }
        note = "the bytes read are not the object's: \(kept.algorithm.rawValue) \(sum.base64)"
        return BlobStreamError(
            .corrupt, Self.mismatch(name: name, etag: etag, read: "the bytes read have", sum: sum, kept: kept.value))
    }

    /// What fails a read (or a copy) of the object `name` whose bytes (`read`: "the bytes read
    /// have") have `sum`, where the store keeps `kept` of the same algorithm.
    static func mismatch(name: String, etag: String?, read: String, sum: S3Checksum, kept: String) -> String {
        let algorithm = sum.algorithm.rawValue
        return
            "\(name): \(read) \(algorithm) \(sum.base64) (hex \(sum.hex)), but the store keeps FULL_OBJECT \(algorithm) \(kept) for the object\(etag.map { " (ETag \($0))" } ?? ""): other bytes than those stored were received"
    }

    /// Keeps the CRC the `HEAD`'s answer names, or none.
    private func narrow(_ result: Result<HTTPClient.Response, any Error>) {
        narrowed = true
        let found = Self.fullObjectChecksum(result, etag: etag)
        switch found {
        case .success(let checksum):
            kept = checksum
            sums = sums.filter { $0.algorithm == checksum.algorithm }
        case .failure(let why):
            unchecked = why.reason
            sums = []
        }
    }

    /// Why a read is unchecked.
    struct Unchecked: Error {
        var reason: String
    }

    /// The full-object CRC a `HEAD`'s answer gives, or why there is none to check against.
    static func fullObjectChecksum(_ result: Result<HTTPClient.Response, any Error>, etag: String?) -> Result<
        (algorithm: S3ChecksumAlgorithm, value: String), Unchecked
    > {
        switch result {
        case .success(let response): fullObjectChecksum(status: response.status, headers: response.headers, etag: etag)
        case .failure(let error):
            .failure(Unchecked(reason: "the HEAD that asks for the store's checksum failed (\(error))"))
        }
    }

    /// The full-object CRC a `HEAD`'s answer (`status`, `headers`) gives, or why there is
    /// none to check against: none kept, a `COMPOSITE` one (`x-amz-checksum-type`, or a value
    /// with `-N`), a SHA-1 or SHA-256 (whole or composite: not a CRC), another ETag.
    static func fullObjectChecksum(status: HTTPResponseStatus, headers: HTTPHeaders, etag: String?) -> Result<
        (algorithm: S3ChecksumAlgorithm, value: String), Unchecked
    > {
        guard (200..<300).contains(Int(status.code)) else {
            return .failure(
                Unchecked(reason: "the HEAD that asks for the store's checksum was answered \(status.code)"))
        }
        if let etag, let now = headers.first(name: "ETag"), now != etag {
            return .failure(Unchecked(reason: "the object changed after it was read (ETag \(now), not \(etag))"))
        }
        let algorithms = S3ChecksumAlgorithm.allCases.compactMap { algorithm in
            headers.first(name: algorithm.headerName).map { (algorithm, $0) }
        }
        // A CRC the store keeps first: it is the one a read can check.
        guard let (algorithm, value) = algorithms.first(where: { $0.0.combinesParts }) ?? algorithms.first else {
            return .failure(Unchecked(reason: "the store keeps no checksum of the object"))
        }
        let type = headers.first(name: "x-amz-checksum-type")?.uppercased()
        guard !value.contains("-"), type != S3ChecksumType.composite.rawValue else {
            return .failure(
                Unchecked(
                    reason:
                        "the store keeps a COMPOSITE \(algorithm.rawValue) (\(value)), the checksum of its parts' checksums, which the parts' sizes would be needed to check"
                ))
        }
        guard algorithm.combinesParts else {
            return .failure(
                Unchecked(
                    reason:
                        "the store keeps a \(algorithm.rawValue) of the whole object (\(value)), and a read is checked only against a CRC-64/NVME, CRC-32 or CRC-32C"
                ))
        }
        return .success((algorithm, value))
    }
}

/// The `HEAD` a whole-object check sent for the checksum the store keeps, to be awaited
/// where the object's bytes are not read in order from the first (a copy in parts, whose
/// parts' CRCs combine into the whole object's).
struct S3KeptChecksumQuestion: Sendable {
    /// The object, as messages name it: `s3://bucket/key`.
    let name: String
    /// Its ETag when the check was made: the `HEAD`'s must be the same.
    let etag: String?
    /// The `HEAD`'s answer to come.
    let head: EventLoopFuture<HTTPClient.Response>

    /// The `FULL_OBJECT` CRC the store keeps, once the `HEAD` answered (awaited: no thread
    /// waits; the `HEAD` has a deadline), or why there is none to check against.
    func answer() async -> Result<(algorithm: S3ChecksumAlgorithm, value: String), S3WholeObjectCheck.Unchecked> {
        let result: Result<HTTPClient.Response, any Error>
        do {
            result = .success(try await head.get())
        } catch {
            result = .failure(error)
        }
        return S3WholeObjectCheck.fullObjectChecksum(result, etag: etag)
    }
}

extension TimeAmount {
    /// Whole seconds, at least 1.
    fileprivate var seconds: Double { max(Double(nanoseconds) / 1e9, 1) }
}
