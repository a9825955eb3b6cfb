import BlobStream
import BlobStreamTestSupport
import BlobStreamUpload
import Foundation
import Testing

/// `MultipartBody` composed without a server: the bytes a form sends, its length, its
/// content type, and whether it can be sent again.
@Suite("MultipartBody: the form-data bytes, length and repeatability")
struct MultipartBodyTests {
    @Test("fields and a file: the exact multipart/form-data bytes, and a length equal to their count")
    func bytesAndLength() throws {
        let file = sampleBytes(10_000)
        var form = MultipartBody(boundary: "XyZ")
        form.addField(name: "album", value: "Holidays")
        form.addFile(
            name: "photo", filename: "IMG_0001.JPG", contentType: "image/jpeg",
            body: UploadBody(length: Int64(file.count)) { DataBytesSource(file) })
        form.addField(name: "note", value: "")
        let body = form.uploadBody
        #expect(form.contentType == "multipart/form-data; boundary=XyZ")
        #expect(body.contentType == form.contentType)
        let expected =
            Data(
                ("--XyZ\r\nContent-Disposition: form-data; name=\"album\"\r\n\r\nHolidays\r\n"
                    + "--XyZ\r\nContent-Disposition: form-data; name=\"photo\"; filename=\"IMG_0001.JPG\"\r\n"
                    + "Content-Type: image/jpeg\r\n\r\n").utf8) + file
            + Data(("\r\n--XyZ\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\n\r\n--XyZ--\r\n").utf8)
        let (bytes, error) = try read(body, chunkSize: 777)
        #expect(error == nil)
        #expect(bytes == expected)
        #expect(body.length == Int64(expected.count))
        #expect(body.isRepeatable)
        // A second source gives the same bytes again.
        #expect(try read(body).data == expected)
    }

    @Test("quotes, CR and LF in names are escaped as browsers do: %22, %0D, %0A")
    func quotedNames() throws {
        var form = MultipartBody(boundary: "b")
        form.addFile(
            name: "a\"b", filename: "evil\r\nX-Injected: 1.txt", body: UploadBody(length: 0) { DataBytesSource(Data()) }
        )
        let text = String(decoding: try read(form.uploadBody).data, as: UTF8.self)
        #expect(text.contains("name=\"a%22b\"; filename=\"evil%0D%0AX-Injected: 1.txt\"\r\n"))
        #expect(!text.contains("\r\nX-Injected"))
        #expect(text.contains("Content-Type: application/octet-stream\r\n\r\n"))
    }

    @Test("a file part of unknown length: no total length; one read once: the form is not repeatable")
    func unknownLengthAndOnce() throws {
        var form = MultipartBody(boundary: "b")
        form.addField(name: "f", value: "v")
        #expect(form.uploadBody.length != nil && form.uploadBody.isRepeatable)
        form.addFile(
            name: "pipe", filename: "p",
            body: UploadBody(length: nil, repeatable: false) { DataBytesSource(Data("xyz".utf8)) })
        let body = form.uploadBody
        #expect(body.length == nil)
        #expect(!body.isRepeatable)
        let text = String(decoding: try read(body).data, as: UTF8.self)
        #expect(text.hasSuffix("\r\n\r\nxyz\r\n--b--\r\n"), "\(text)")
    }

    @Test("the default boundary differs between forms and does not occur in the content type twice")
    func defaultBoundary() {
        let (a, b) = (MultipartBody(), MultipartBody())
        #expect(a.boundary != b.boundary)
        #expect(a.boundary.hasPrefix("BlobStream-") && a.boundary.count > 20)
        #expect(a.contentType == "multipart/form-data; boundary=\(a.boundary)")
    }
}
