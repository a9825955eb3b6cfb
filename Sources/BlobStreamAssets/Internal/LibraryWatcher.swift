import BlobStream
import BlobStreamSystem
import Dispatch
import Synchronization

/// A library's change counter, shared with the representations it hands out: each records
/// the value at its lookup and is invalid once the counter moved on.
final class Generation: Sendable {
    private let value = Atomic<UInt64>(0)

    /// The current value (a lock-free load).
    var current: UInt64 { value.load(ordering: .acquiring) }

    /// Records a change.
    func bump() { value.add(1, ordering: .acquiringAndReleasing) }
}

/// Watches a library's folders with inotify and bumps its `Generation` on every change:
/// the root (so that `originals/` and `renders/` appearing or going are seen) and every
/// folder under `originals/` and `renders/`, including folders created later.
///
/// Events arrive asynchronously (on a queue of its own), shortly after the change.
final class LibraryWatcher: Sendable {
    private struct Watching {
        var inotify: Inotify?
        var source: (any DispatchSourceRead)?
        var paths: [Int32: String] = [:]
        var failed = false
    }

    let generation: Generation
    private let root: String
    private let queue = DispatchQueue(label: "BlobStreamAssets.DirectoryAssetLibrary.watcher")
    private let watching = Locked(Watching())

    init(root: String, generation: Generation) {
        self.root = root
        self.generation = generation
    }

    /// Whether inotify watches the library now (false before the root exists, or when
    /// inotify is not available: out of instances or watches).
    var isActive: Bool { watching.withLock { $0.source != nil && !$0.failed } }

    /// Starts watching when not yet and the root exists. Returns `isActive`.
    @discardableResult
    func start() -> Bool {
        watching.withLock { w in
            if w.source != nil { return !w.failed }
            guard case .success(let id) = FileStatus.at(root), id.isDirectory,
                case .success(let inotify) = Inotify.make()
            else { return false }
            w.inotify = inotify
            w.failed = !addTree(root, into: &w, depth: 0)
            let source = DispatchSource.makeReadSource(fileDescriptor: inotify.descriptor.rawValue, queue: queue)
            source.setEventHandler { [weak self] in self?.drain() }
            source.setCancelHandler { inotify.close() }
            w.source = source
            source.resume()
            return !w.failed
        }
    }

    /// Stops watching and closes the inotify descriptor.
    func stop() {
        watching.withLock { w in
            w.source?.cancel()
            w.source = nil
            w.paths = [:]
        }
    }

    /// Adds a watch on `path` and, below the root, on every folder under it; at the root,
    /// on `originals/` and `renders/` trees. Returns false when a watch could not be added.
    private func addTree(_ path: String, into w: inout Watching, depth: Int) -> Bool {
        guard depth < 64 else { return true }
        guard let inotify = w.inotify else { return false }
        switch inotify.watch(path) {
        case .success(let wd): w.paths[wd] = path
        case .failure(let failure): return failure.isNotFound // gone meanwhile: nothing to watch
        }
        var ok = true
        let children = depth == 0 ? ["originals", "renders"] : DirectoryWalker.subfolders(of: path)
        for name in children {
            let child = path + "/" + name
            if case .success(let id) = FileStatus.at(child), id.isDirectory {
                ok = addTree(child, into: &w, depth: depth + 1) && ok
            }
        }
        return ok
    }

    /// Reads the pending events: any event is a change; a new folder gets watched.
    private func drain() {
        let events = watching.withLock { w in w.source != nil ? w.inotify?.readEvents() ?? [] : [] }
        guard !events.isEmpty else { return }
        var changed = false
        watching.withLock { w in
            guard w.source != nil else { return }
            for event in events {
                if event.isWatchRemoved {
                    w.paths[event.watch] = nil
                    continue
                }
                changed = true
                if event.isDirectory, event.isCreation, let parent = w.paths[event.watch], !event.name.isEmpty {
                    let atRoot = parent == root
                    if !atRoot || event.name == "originals" || event.name == "renders" {
                        if !addTree(parent + "/" + event.name, into: &w, depth: atRoot ? 1 : 2) { w.failed = true }
                    }
                }
            }
        }
        if changed { generation.bump() }
    }

    deinit { stop() }
}
