import Testing

@testable import BlobStreamHTTPClient

@Suite("RangePlan: how many blocks are read ahead")
struct RangePlanTests {
    func options(readAhead: Int, downloadReadAhead: Int?) -> HTTPRangeOptions {
        var options = HTTPRangeOptions(blockSize: 1 << 20, readAhead: readAhead, connection: HTTPConnectionOptions())
        options.downloadReadAhead = downloadReadAhead
        return options
    }

    @Test("a download reads downloadReadAhead blocks ahead; after a jump, one while the blocks grow, then readAhead")
    func downloadAndJump() {
        var plan = RangePlan(options: options(readAhead: 2, downloadReadAhead: 3))
        #expect(plan.isDownload && plan.aheadLimit == 3)
        plan.freshBlock(at: 5_000_000) // not where the last block ended: a jump
        #expect(!plan.isDownload && plan.aheadLimit == 1)
        var sizes: [Int] = []
        repeat { sizes.append(plan.nextSize()) } while sizes.last! < 1 << 20
        #expect(sizes == [128 << 10, 256 << 10, 512 << 10, 1 << 20])
        #expect(plan.aheadLimit == 2)
    }

    @Test("a hint of random access or of a planned read is no download: readAhead")
    func hints() {
        var random = RangePlan(options: options(readAhead: 2, downloadReadAhead: 3))
        random.expectRandomAccess()
        random.tookFirstBlock(endingAt: 64 << 10)
        while random.nextSize() < 1 << 20 {}
        #expect(random.aheadLimit == 2)
        var planned = RangePlan(options: options(readAhead: 2, downloadReadAhead: 3))
        planned.planned(from: 1_000, to: 9_000_000, isLong: true)
        #expect(planned.aheadLimit == 2)
    }

    @Test("without downloadReadAhead a download reads readAhead ahead; a negative one counts as 0")
    func defaults() {
        #expect(RangePlan(options: options(readAhead: 3, downloadReadAhead: nil)).aheadLimit == 3)
        #expect(RangePlan(options: options(readAhead: 0, downloadReadAhead: nil)).aheadLimit == 0)
        #expect(options(readAhead: 2, downloadReadAhead: -4).downloadReadAhead == 0)
        #expect(RangePlan(options: options(readAhead: 2, downloadReadAhead: -4)).aheadLimit == 0)
    }
}
