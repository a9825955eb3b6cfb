import BlobStream

/// Where the check of a read whole from the first byte stands (`HTTPWholeObjectCheck`).
enum WholeCheckState {
    /// No byte handed out yet.
    case notStarted
    /// Told the object's first `told` bytes, in order.
    case running(any HTTPWholeObjectCheck, told: Int64)
    /// Finished: its note.
    case finished(note: String?)
    /// None: no check was made for the source, or the read did not go in order from the
    /// first byte.
    case dropped
}

extension HTTPRangeDataSource {
    /// What the check of a read whole from the object's first byte to its end came to
    /// (`options.wholeObjectCheck`): "checked against …" or "unchecked: …" once the last
    /// byte was read; nil before, or when no check was made (no check was set, the read
    /// started elsewhere or moved).
    public var wholeObjectCheckNote: String? {
        if case .finished(let note) = wholeCheck { return note }
        return nil
    }

    /// Tells the whole-object check `bytes`, about to be handed out at `offset`; at the
    /// object's end, its verdict: an error fails the read instead of its last bytes.
    /// Bytes handed out anywhere but right after those told drop the check.
    func checkWhole(_ bytes: UnsafeRawBufferPointer, at offset: Int64, of object: RemoteObject) -> BlobStreamError? {
        switch wholeCheck {
        case .notStarted:
            guard offset == 0, let make = options.wholeObjectCheck,
                let check = make(HTTPObjectFacts(length: object.length, etag: object.etag))
            else {
                wholeCheck = .dropped
                return nil
            }
            wholeCheck = .running(check, told: 0)
            return checkWhole(bytes, at: offset, of: object)
        case .running(let check, let told):
            guard offset == told else {
                wholeCheck = .dropped
                return nil
            }
            check.update(bytes)
            let now = told + Int64(bytes.count)
            guard now == object.length else {
                wholeCheck = .running(check, told: now)
                return nil
            }
            let verdict = check.finish()
            wholeCheck = .finished(note: check.note)
            return verdict
        case .finished, .dropped:
            return nil
        }
    }
}

extension HTTPRangeDataSource: BlobReadReporting {
    /// `wholeObjectCheckNote`: what the check of a read whole from the first byte came to.
    public var readReport: String? { wholeObjectCheckNote }
}
