import BlobStream
import BlobStreamArchive
import BlobStreamFiles
import BlobStreamGzip
import BlobStreamTestSupport
import Foundation
import Testing

@Suite("archive: URLs")
struct URLTests {
    @Test("the LAST !/ separates the member; the member is decoded once, the inner URL not at all")
    func split() throws {
        #expect(try ArchiveSources.split(url: "archive:file:///a/b.tar!/x/y.txt") == ("file:///a/b.tar", "x/y.txt"))
        #expect(
            try ArchiveSources.split(url: "archive:archive:file:///x.deb!/data.tar.xz!/usr/bin/hello")
                == ("archive:file:///x.deb!/data.tar.xz", "usr/bin/hello"))
        #expect(
            try ArchiveSources.split(url: "archive:file:///t.tar!/bang%21name.txt") == (
                "file:///t.tar", "bang!name.txt"
            ))
        #expect(
            try ArchiveSources.split(url: "archive:file:///a%20b.tar!/%D1%84%D0%BE%D1%82%D0%BE/x%2541")
                == ("file:///a%20b.tar", "фото/x%41"))
        #expect(try ArchiveSources.split(url: "ARCHIVE:file:///t.tar!/m") == ("file:///t.tar", "m"))
        for bad in [
            "archive:file:///x.tar", "archive:!/x", "archive:file:///x.tar!/", "archive:file:///x.tar!/bad%zz",
            "file:///x.tar!/m",
        ] {
            #expect(throws: BlobStreamError.self, "\(bad)") { try ArchiveSources.split(url: bad) }
            do {
                _ = try ArchiveSources.split(url: bad)
            } catch let error as BlobStreamError {
                #expect(error.code == .malformedURL && error.message.contains(bad), "\(error)")
            }
        }
    }

    @Test("a member read through the registry, with %21 in its name")
    func registry() throws {
        let fixtures = try ArchiveFixtures.get()
        let registry = makeRegistry()
        #expect(registry.handles(scheme: ArchiveSources.scheme))
        let url = "archive:" + BlobURL.fileURL(path: fixtures.archives["pax.tar"]!) + "!/bang%21name.txt"
        let result = drain(try registry.makeSource(url: url))
        #expect(
            result.last == 0 && result.data == fixtures.files["bang!name.txt"], "\(String(describing: result.error))")
        let missing = drain(
            try registry.makeSource(url: "archive:" + BlobURL.fileURL(path: fixtures.archives["pax.tar"]!) + "!/nope"))
        #expect(missing.error?.code == .notFound)
        #expect(missing.error?.message.contains("file://") == true && missing.error?.message.contains("nope") == true)
        #expect(throws: BlobStreamError.self) { try registry.makeSource(url: "archive:nosuch:///x!/y") }
    }

    @Test("nested: a tar inside a tar.gz, and through a gzip: source")
    func nested() throws {
        let fixtures = try ArchiveFixtures.get()
        let dir = try makeTemporaryDirectory("nested")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.copyItem(atPath: fixtures.archives["pax.tar"]!, toPath: dir + "/inner.tar")
        try run("bsdtar", ["-czf", dir + "/outer.tar.gz", "-C", dir, "inner.tar"])
        try run("sh", ["-c", "gzip -c '\(dir)/inner.tar' > '\(dir)/inner.tar.gz'"])
        let registry = makeRegistry()
        registry.register(scheme: GzipDataSource.scheme) { url, registry in
            GzipDataSource(upstream: try registry.makeSource(url: BlobURL.removingScheme(url)), name: url)
        }
        let big = fixtures.files["sub/big.bin"]!
        for url in [
            "archive:archive:\(BlobURL.fileURL(path: dir + "/outer.tar.gz"))!/inner.tar!/sub/big.bin",
            "archive:archive:\(BlobURL.fileURL(path: dir + "/outer.tar.gz"))!/./inner.tar!/./sub/big.bin",
            "archive:gzip:\(BlobURL.fileURL(path: dir + "/inner.tar.gz"))!/sub/big.bin",
        ] {
            let result = drain(try registry.makeSource(url: url))
            #expect(result.last == 0 && result.data == big, "\(url): \(String(describing: result.error))")
        }
        // Offsets backward through two levels restart both.
        let source = try registry.makeSource(
            url: "archive:archive:\(BlobURL.fileURL(path: dir + "/outer.tar.gz"))!/inner.tar!/sub/big.bin")
        let stream = BlobInputStream(dataSource: source)
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 100_000)
        #expect(stream.read(&buffer, maxLength: buffer.count) > 0)
        #expect(stream.setProperty(NSNumber(value: 5), forKey: .fileCurrentOffsetKey))
        #expect(stream.read(&buffer, maxLength: 100) == 100)
        #expect(Data(buffer.prefix(100)) == big.subdata(in: 5..<105))
        stream.close()
        // Errors name the nested archive.
        let missing = drain(
            try registry.makeSource(
                url: "archive:archive:\(BlobURL.fileURL(path: dir + "/outer.tar.gz"))!/inner.tar!/nope"))
        #expect(missing.error?.code == .notFound)
        #expect(
            missing.error?.message.contains("outer.tar.gz!/inner.tar") == true, "\(String(describing: missing.error))")
    }

    @Test("a file out of a Debian package: archive:archive:file:///x.deb!/data.tar.xz!/usr/bin/hello")
    func debianPackage() throws {
        let dir = try makeTemporaryDirectory("deb")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let hello = randomBytes(70_000, seed: 2024)
        try write(hello, to: dir + "/root/usr/bin/hello")
        try write(Data("Copyright: none\n".utf8), to: dir + "/root/usr/share/doc/hello/copyright")
        try write(
            Data(
                "Package: hello\nVersion: 1.0\nArchitecture: amd64\nMaintainer: nobody <n@example.org>\nDescription: test\n"
                    .utf8), to: dir + "/control/control")
        try write(Data("2.0\n".utf8), to: dir + "/pkg/debian-binary")
        try run("tar", ["--owner=0", "--group=0", "-cJf", dir + "/pkg/control.tar.xz", "-C", dir + "/control", "."])
        try run("tar", ["--owner=0", "--group=0", "-cJf", dir + "/pkg/data.tar.xz", "-C", dir + "/root", "."])
        try run("ar", ["rc", dir + "/hello.deb", "debian-binary", "control.tar.xz", "data.tar.xz"], in: dir + "/pkg")
        #expect(
            try ArchiveListing.entries(ofArchiveAt: dir + "/hello.deb").map(\.path) == [
                "debian-binary", "control.tar.xz", "data.tar.xz",
            ])
        let registry = makeRegistry()
        let deb = BlobURL.fileURL(path: dir + "/hello.deb")
        let result = drain(try registry.makeSource(url: "archive:archive:\(deb)!/data.tar.xz!/usr/bin/hello"))
        #expect(result.last == 0 && result.data == hello, "\(String(describing: result.error))")
        #expect(result.length == Int64(hello.count))
        let control = drain(try registry.makeSource(url: "archive:archive:\(deb)!/control.tar.xz!/control"))
        #expect(control.last == 0 && String(decoding: control.data, as: UTF8.self).hasPrefix("Package: hello"))
        // Listing the inner archive over the outer member (an upstream that cannot seek).
        let inner = ArchiveMemberDataSource(archive: dir + "/hello.deb", member: "data.tar.xz")
        let entries = try ArchiveListing.entries(of: inner)
        #expect(entries.contains { $0.path == "./usr/bin/hello" && $0.size == Int64(hello.count) }, "\(entries)")
    }
}
