// The fenced ```swift blocks of README.md and the DocC articles are compiled in this target:
// scripts/check-snippets generates Snippet_*.swift beside this file (ignored by git), one per
// block, and runs `swift build --target DocSnippets`. This file keeps the folder in git.
