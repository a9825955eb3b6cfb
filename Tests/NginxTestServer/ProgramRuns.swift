import Foundation

/// Runs the test suite's programs (the built tool, a shell line) to their end, at most
/// `width` at a time, each waiting on a thread of its own.
///
/// The suite's tests share Swift's cooperative pool, as wide as the machine has cores (2).
/// A test blocked there in `waitUntilExit` holds a whole thread: two such tests stalled
/// every other test, and the time bounds those check (an upload seen sending nothing for
/// 10 s). Waiting on a thread of its own frees the pool; the width keeps as few programs
/// running at once as the pool did before, so that their start-up times, which time bounds
/// subtract, stay as they were.
public enum ProgramRuns {
    /// How many programs run at once.
    public static let width = 2

    private static let slots = Slots(width)

    /// `work` (which starts a program and waits for it) on a thread of its own, once one of
    /// the `width` slots is free.
    public static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        await slots.take()
        defer { Task { await slots.give() } }
        return try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}

/// A counting semaphore whose waiters are suspended, first come first served.
private actor Slots {
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(_ count: Int) { free = count }

    func take() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func give() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
