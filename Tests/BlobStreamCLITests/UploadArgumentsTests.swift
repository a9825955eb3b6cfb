import ArgumentParser
import BlobStreamCLI
import Foundation
import Testing

/// `blobstream upload`'s arguments, parsed and validated without a process: the refusals a
/// user meets before anything is sent, each naming what to change.
@Suite("UploadArguments: parsing and validation")
struct UploadArgumentsTests {
    /// The message the tool prints for `arguments`, or nil when they parse.
    static func refusal(_ arguments: [String]) -> String? {
        do {
            _ = try UploadArguments.parse(arguments)
            return nil
        } catch {
            return UploadArguments.message(for: error)
        }
    }

    @Test("a source and an http:// destination parse: PUT, AsyncHTTPClient, not S3, the timeouts as given")
    func valid() throws {
        let parsed = try UploadArguments.parse([
            "a.bin", "--to", "http://127.0.0.1:8080/a.bin", "--idle-timeout", "2.5",
        ])
        #expect(parsed.source == "a.bin" && parsed.to == "http://127.0.0.1:8080/a.bin")
        #expect(parsed.method == "PUT" && parsed.client == .asynchttpclient)
        #expect(!parsed.isS3 && !parsed.buildIndex && parsed.indexOutput == nil)
        #expect(parsed.uploadOptions.idleTimeout == .milliseconds(2_500))
        let s3 = try UploadArguments.parse(["-", "--to", "s3://bucket/key", "--part-size", "16MiB"])
        #expect(s3.isS3 && s3.source == "-" && s3.s3.partSizeBytes == 16 << 20)
    }

    @Test(
        "each refusal names the option and what to do",
        arguments: [
            (["--to", "http://h/x"], "name the SOURCE to upload"),
            (["a", "--to", "http://h/x", "--method", "DELETE"], "--method must be PUT or POST, not DELETE"),
            (["a", "--to", "ftp://h/x"], "--to: "),
            (
                ["a", "--to", "http://h/x", "--index-output", "i.idx"],
                "--index-output names where --build-index writes"
            ),
            (["a", "--to", "http://h/x", "--build-index"], "needs --index-output PATH or s3://"),
            (
                ["a", "--to", "http://h/x", "--build-index", "--method", "POST", "--index-output", "i"],
                "drop --method POST"
            ),
            (["a", "--to", "http://h/x", "--connect-timeout", "0"], "--connect-timeout must be a number of seconds"),
            (["a", "--to", "http://h/x", "--idle-timeout", "nan"], "--idle-timeout must be a number of seconds"),
            (["a", "--to", "http://h/x", "--part-size", "16MiB"], "the S3 options need --to s3://bucket/key"),
            (["a", "--to", "s3://bucket/k", "--client", "urlsession"], "uploads with AsyncHTTPClient only"),
            (["a", "--to", "s3://bucket"], "an S3 destination is s3://bucket/key"),
            (["a", "--to", "s3://b/k", "--part-size", "1MiB"], "--part-size must be 5MiB to 5GiB"),
            (["a", "--to", "s3://b/k", "--parallel", "65"], "--parallel must be 1 to 64, not 65"),
            (["a", "--to", "s3://b/k", "--metadata", "=v"], "--metadata takes KEY=VALUE, not =v"),
            (
                ["a", "--to", "s3://b/k", "--body-check", "checksum"],
                "--body-check checksum needs --checksum-algorithm"
            ),
            (
                ["a", "--to", "s3://b/k", "--abort", "--upload-id", "u"],
                "--abort ends an unfinished upload and takes no source"
            ),
            (["--to", "s3://b/k", "--abort"], "--abort needs the --upload-id"),
            (["-", "--to", "s3://b/k", "--resume", "--build-index"], "cannot rebuild the index of a resumed upload"),
            (
                ["a", "--to", "s3://b/k", "--build-index", "--index-output", "s3://b/k"],
                "it is the object uploaded (--to)"
            ),
        ])
    func refusals(_ arguments: [String], _ expected: String) {
        let message = Self.refusal(arguments)
        #expect(message?.contains(expected) == true, "\(arguments): \(message ?? "parsed")")
    }

    @Test("--index-output may not be the source file, a FIFO or a folder: refused before anything is sent")
    func indexOutputRefusals() throws {
        let folder = try TemporaryFolder()
        let source = try folder.file("a.tar.gz", Data("not read".utf8))
        let fifo = folder.path("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        for (output, why) in [(source, "it is the input"), (fifo, "it is a FIFO"), (folder.path, "it is a directory")] {
            let message = Self.refusal([source, "--to", "http://h/x", "--build-index", "--index-output", output])
            #expect(message?.contains("cannot write the index to '\(output)'") == true, "\(message ?? "parsed")")
            #expect(message?.contains(why) == true, "\(why): \(message ?? "parsed")")
        }
        // A new path in the folder is accepted.
        let fine = try UploadArguments.parse([
            source, "--to", "http://h/x", "--build-index", "--index-output", folder.path("new.blobidx"),
        ])
        #expect(fine.buildIndex && fine.indexOutput == folder.path("new.blobidx"))
    }

    @Test("part sizes: bytes, KiB, MiB, GiB (and their short forms); anything else is no size")
    func partSizes() {
        #expect(S3UploadArguments.size("5242880") == 5 << 20)
        #expect(S3UploadArguments.size("512KiB") == 512 << 10 && S3UploadArguments.size("512k") == 512 << 10)
        #expect(S3UploadArguments.size("8MiB") == 8 << 20 && S3UploadArguments.size("8MB") == 8 << 20)
        #expect(S3UploadArguments.size("1GiB") == 1 << 30 && S3UploadArguments.size("1g") == 1 << 30)
        for bad in ["", "MiB", "8 MiB", "8TiB", "-1", "99999999999999999999G"] {
            #expect(S3UploadArguments.size(bad) == nil, "\(bad)")
        }
    }
}
