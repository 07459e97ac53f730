// Replay: finding the record at the read cursor, checked, and handing it out. Records are read
// 64 KiB at a time with pread(2) into a buffer the spool owns; `next` hands out views into it.

#if canImport(Glibc)
import Glibc
#endif
import LinuxSystem

extension Spool {
    /// The record at `p` as the caller of `next` sees it: views into the read buffer.
    static func message(_ p: UnsafeRawPointer, _ h: SpoolRecord.Header) -> SpooledMessage {
        let topic = p + SpoolRecord.headerSize
        return SpooledMessage(
            sequence: h.sequence, qos: h.qos, retain: h.retain,
            topic: UnsafeRawBufferPointer(start: topic, count: h.topicLength),
            topicCString: topic.assumingMemoryBound(to: CChar.self),
            payload: UnsafeRawBufferPointer(start: topic + h.topicLength + 1,
                                            count: h.length - SpoolRecord.overhead - h.topicLength))
    }

    /// The record at the read cursor is now in flight; the cursor moves past it.
    func handOut(_ h: SpoolRecord.Header) {
        flights.append(Flight(sequence: h.sequence, length: h.length, segment: segments[readSegment].name, done: false))
        readOffset += h.length
        readIndex += 1
        readLastSequence = h.sequence
    }

    /// The record at the read cursor, checked, in the read buffer; moves the cursor over segment
    /// ends and repairs damage it finds.
    func locateNext() throws(SpoolError) -> (UnsafeRawPointer, SpoolRecord.Header)? {
        while true {
            guard readSegment < segments.count else { return nil }
            let segment = segments[readSegment]
            let remaining = segment.size - readOffset
            if remaining <= 0 {
                guard readSegment + 1 < segments.count else { return nil }
                readSegment += 1
                readOffset = 0
                readIndex = 0
                continue
            }
            var need = min(SpoolRecord.headerSize, remaining)
            while true {
                let (p, available) = try fill(readSegment, offset: readOffset, atLeast: need)
                let minimum = readIndex > 0 ? readLastSequence &+ 1 : 0
                switch SpoolRecord.check(p, available: min(available, remaining), minimumSequence: minimum) {
                case .valid(let h):
                    return (p, h)
                case .needMore(let n) where n <= remaining && n > need && available >= need:
                    need = n
                    continue
                default:
                    break
                }
                try repairWhileReading()
                break
            }
        }
    }

    /// Makes `[offset, offset + atLeast)` of segment `index` present in the read buffer; returns a
    /// pointer to `offset` and how many bytes from there are in the buffer (less than `atLeast`
    /// only if the file is shorter than it should be).
    private func fill(_ index: Int, offset: Int, atLeast: Int) throws(SpoolError) -> (UnsafeRawPointer, Int) {
        let segment = segments[index]
        let base = UnsafeRawPointer(readBuffer.baseAddress!)
        if bufferSegment == segment.name && offset >= bufferStart && offset + atLeast <= bufferStart + bufferCount {
            return (base + (offset - bufferStart), bufferStart + bufferCount - offset)
        }
        if atLeast > readBuffer.count {
            let capacity = max(atLeast, readBuffer.count * 2)
            readBuffer.deallocate()
            readBuffer = .allocate(byteCount: capacity, alignment: 16)
        }
        bufferSegment = nil
        let fd = try readDescriptor(for: segment.name)
        let want = min(readBuffer.count, segment.size - offset)
        var got = 0
        while got < want {
            let n: Int
            do {
                n = try fd.read(fromAbsoluteOffset: offset + got, into: UnsafeMutableRawBufferPointer(rebasing: readBuffer[got..<want]))
            } catch {
                throw SpoolError(.read, error, path: path(segment: segment.name))
            }
            if n == 0 { break }
            got += n
        }
        bufferSegment = segment.name
        bufferStart = offset
        bufferCount = got
        return (UnsafeRawPointer(readBuffer.baseAddress!), got)
    }

    private func readDescriptor(for name: UInt64) throws(SpoolError) -> FileDescriptor {
        if let fd = readFD, readFDSegment == name { return fd }
        readFD?.close()
        readFD = nil
        let fd = try openSegment(name, O_RDONLY)
        readFD = fd
        readFDSegment = name
        return fd
    }

    /// Forgets the read cache and descriptor (their segment changed or is gone).
    func invalidateReadState() {
        bufferSegment = nil
        readFD?.close()
        readFD = nil
    }
}
