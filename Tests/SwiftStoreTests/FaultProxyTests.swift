import Foundation
import SwiftStoreTestServer
import Testing

/// The fault proxy's rules, each checked against what the real store ends up holding.
@Suite("The fault-injecting proxy in front of the store")
struct FaultProxyTests {
    let store: SwiftStoreTestServer
    let proxy: FaultProxy
    let bucket = SwiftStoreTestServer.uniqueBucketName("proxy")
    let viaProxy: SwiftAPI

    init() async throws {
        store = try await SwiftStoreTestServer.shared()
        proxy = try await FaultProxy.start(upstream: store.endpoint)
        viaProxy = SwiftAPI(endpoint: proxy.endpoint, user: store.accessKey, key: store.secretKey)
        try await store.swiftAPI.createContainer(bucket)
    }

    @Test("corrupt: the nth matching body reaches the store with one byte flipped, the others intact")
    func corruptDamagesOneByte() async throws {
        defer { proxy.stop() }
        let body = patternBytes(200_000, seed: 7)
        try await proxy.setRules([.corrupt(method: "PUT", path: "/obj$", nth: 2)])
        for name in ["obj", "other", "obj", "obj"] {
            try await viaProxy.put(bucket, name, body)
        }
        // The second PUT of "obj" was damaged; the third and fourth overwrote it intact.
        let seen = try await proxy.log().filter { $0.method == "PUT" && $0.target.hasSuffix("/\(bucket)/obj") }
        #expect(seen.map(\.action) == ["forward", "corrupt", "forward"])
        #expect(seen.allSatisfy { $0.bodyBytes == body.count && $0.status == 201 })

        try await proxy.setRules([.corrupt(method: "PUT", path: "/damaged$")])
        let etag = try await viaProxy.put(bucket, "damaged", body)
        let stored = try await store.swiftAPI.get(bucket, "damaged").body
        #expect(etag != md5(body))
        #expect(etag == md5(stored))
        #expect(stored.count == body.count)
        let differing = zip(stored, body).enumerated().filter { $0.element.0 != $0.element.1 }
        #expect(differing.map(\.offset) == [body.count / 2])
        #expect(differing.first.map { $0.element.0 == $0.element.1 ^ 0xFF } == true)
        #expect(try await store.swiftAPI.get(bucket, "obj").body == body)
    }

    @Test("status: the nth matching request is answered 503 and never reaches the store")
    func statusRefusesTheNthRequest() async throws {
        defer { proxy.stop() }
        try await proxy.setRules([.status(503, method: "PUT", path: "/retried$", nth: 2)])
        try await viaProxy.put(bucket, "retried", patternBytes(1000, seed: 1))
        await #expect(throws: SwiftStoreTestServer.Failure.self) {
            try await viaProxy.put(bucket, "retried", patternBytes(1000, seed: 2))
        }
        #expect(try await store.swiftAPI.get(bucket, "retried").body == patternBytes(1000, seed: 1))
        try await viaProxy.put(bucket, "retried", patternBytes(1000, seed: 3))
        #expect(try await store.swiftAPI.get(bucket, "retried").body == patternBytes(1000, seed: 3))
        let seen = try await proxy.log().filter { $0.target.hasSuffix("/retried") }
        #expect(seen.map(\.status) == [201, 503, 201])
        #expect(seen.map(\.rule) == [nil, 0, nil])
    }

    @Test("drop: the connection is reset mid-body and the store keeps nothing")
    func dropResetsMidBody() async throws {
        defer { proxy.stop() }
        try await proxy.setRules([.drop(method: "PUT", path: "/dropped$", afterBytes: 1000)])
        await #expect(throws: (any Error).self) {
            try await viaProxy.put(bucket, "dropped", patternBytes(500_000))
        }
        let seen = try await proxy.log().filter { $0.target.hasSuffix("/dropped") }
        #expect(seen.count == 1)
        #expect(seen.first?.method == "PUT")
        #expect(seen.first?.action == "drop")
        #expect(seen.first?.rule == 0)
        #expect(seen.first?.bodyBytes == 1000)
        #expect(seen.first.map { $0.status == nil } == true)
        #expect(try await store.swiftAPI.get(bucket, "dropped").status == 404)
    }

    @Test("delay: the request waits, then arrives intact")
    func delayWaitsThenForwards() async throws {
        defer { proxy.stop() }
        try await proxy.setRules([.delay(1.0, path: "/slow$")])
        let started = Date()
        try await viaProxy.put(bucket, "slow", patternBytes(10_000))
        #expect(Date().timeIntervalSince(started) >= 1.0)
        #expect(try await store.swiftAPI.get(bucket, "slow").body == patternBytes(10_000))
        #expect(try await proxy.log().filter { $0.target.hasSuffix("/slow") }.map(\.action) == ["delay"])
    }

    @Test("a rule the proxy cannot read is refused with its reason", arguments: ["(", "[a-"])
    func badRuleIsRefused(pattern: String) async throws {
        defer { proxy.stop() }
        await #expect(throws: SwiftStoreTestServer.Failure.self) {
            try await proxy.setRules([.corrupt(path: pattern)])
        }
    }
}
