// "Did you mean": the closest valid name within two edits.


/// The candidate nearest to `word`, ignoring case, or nil. A candidate qualifies when its
/// Levenshtein distance to `word` is at most `maximumDistance` and it keeps more than half of its
/// characters (so "32g" does not suggest "2g"); among those, the fewest edits wins, counting a swap
/// of two neighbours as one ("cc2560" → "cc2650"), then the first in `candidates` order.
func suggestion(for word: String, among candidates: [String], maximumDistance: Int = 2) -> String? {
    let w = Array(word.lowercased().unicodeScalars)
    var best: (candidate: String, distance: Int)?
    for candidate in candidates where candidate != word {
        let c = Array(candidate.lowercased().unicodeScalars)
        guard levenshtein(w, c) <= maximumDistance else { continue }
        let d = levenshtein(w, c, transpositions: true)
        guard 2 * d < c.count else { continue }
        if best == nil || d < best!.distance { best = (candidate, d) }
    }
    return best?.candidate
}

/// Edit distance: insertions, deletions and substitutions; with `transpositions`, a swap of two
/// adjacent characters also counts as one edit (optimal string alignment).
func levenshtein<T: Equatable>(_ a: [T], _ b: [T], transpositions: Bool = false) -> Int {
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { d[i][0] = i }
    for j in 0...b.count { d[0][j] = j }
    for i in 1...a.count {
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if transpositions && i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
            }
        }
    }
    return d[a.count][b.count]
}
