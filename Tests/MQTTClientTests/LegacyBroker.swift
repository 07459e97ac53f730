// A broker that does not speak MQTT 5, for what mosquitto 2 cannot be configured to do: refuse
// it. It speaks the real wire protocol, on the test's event loop, and just enough of it for one
// publisher: CONNECT, PUBLISH (QoS 0–2), SUBSCRIBE, PINGREQ, DISCONNECT.

import Glibc
import Reactor

final class LegacyBroker {
    /// How it answers an MQTT 5 CONNECT; a 3.1.1 one is always accepted.
    enum AnswerToV5 {
        /// 3.1.1's CONNACK with return code 1, unacceptable protocol version: a 3.1.1 broker.
        case connack311
        /// MQTT 5's CONNACK with reason code 0x84, unsupported protocol version: a broker that
        /// knows MQTT 5 but will not speak it.
        case connack5
        /// Nothing: the connection is closed, as a very old broker does.
        case close
    }

    let port: Int
    /// The protocol level of every CONNECT received, in order.
    private(set) var connects: [UInt8] = []
    /// Every SUBSCRIBE's topic filters, with their options byte.
    private(set) var subscriptions: [(filter: String, options: UInt8)] = []
    /// The topics of every PUBLISH received.
    private(set) var published: [String] = []

    private let loop: EventLoop
    private let answer: AnswerToV5
    private let listener: Int32
    private var buffers: [Int32: [UInt8]] = [:]

    init(loop: EventLoop, answerToV5 answer: AnswerToV5) throws {
        self.loop = loop
        self.answer = answer
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        listen(fd, 8)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        listener = fd
        port = Int(UInt16(bigEndian: addr.sin_port))
        try loop.watch(listener, .readable) { [weak self] _ in self?.accepting() }
    }

    deinit {
        dropClients()
        loop.unwatch(listener)
        close(listener)
    }

    /// Closes every client connection, as a broker that restarts does.
    func dropClients() {
        for fd in buffers.keys { hangUp(fd) }
    }

    private func accepting() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            buffers[fd] = []
            do {
                try loop.watch(fd, .readable) { [weak self] _ in self?.reading(fd) }
            } catch {
                close(fd)
                buffers[fd] = nil
            }
        }
    }

    private func reading(_ fd: Int32) {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while buffers[fd] != nil {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                buffers[fd]! += chunk[0..<n]
                packets(fd)
            } else if n == 0 || errno != EAGAIN {
                hangUp(fd)
            } else {
                return
            }
        }
    }

    /// Handles every complete packet in `fd`'s buffer.
    private func packets(_ fd: Int32) {
        while let buffer = buffers[fd], buffer.count >= 2 {
            var length = 0, multiplier = 1, at = 1
            while true {
                guard at < buffer.count else { return }  // the length is not all there yet
                length += Int(buffer[at] & 0x7F) * multiplier
                multiplier *= 128
                at += 1
                if buffer[at - 1] & 0x80 == 0 { break }
            }
            guard buffer.count >= at + length else { return }
            let body = Array(buffer[at..<at + length])
            buffers[fd]!.removeFirst(at + length)
            handle(fd, type: buffer[0] >> 4, flags: buffer[0] & 0x0F, body)
        }
    }

    private func handle(_ fd: Int32, type: UInt8, flags: UInt8, _ body: [UInt8]) {
        switch type {
        case 1:  // CONNECT: protocol name, then the level
            let nameLength = Int(body[0]) << 8 | Int(body[1])
            let level = body[2 + nameLength]
            connects.append(level)
            guard level == 5 else {
                write(fd, [0x20, 2, 0, 0])
                return
            }
            switch answer {
            case .connack311: write(fd, [0x20, 2, 0, 1])
            case .connack5: write(fd, [0x20, 3, 0, 0x84, 0])
            case .close: break
            }
            hangUp(fd)
        case 3:  // PUBLISH
            let topicLength = Int(body[0]) << 8 | Int(body[1])
            published.append(String(decoding: body[2..<2 + topicLength], as: UTF8.self))
            let qos = (flags >> 1) & 3
            let id = Array(body[2 + topicLength..<min(body.count, 4 + topicLength)])
            if qos == 1 { write(fd, [0x40, 2] + id) }
            if qos == 2 { write(fd, [0x50, 2] + id) }
        case 6:  // PUBREL
            write(fd, [0x70, 2] + body[0..<2])
        case 8:  // SUBSCRIBE: the packet id, then filters with their options
            var at = 2
            var granted: [UInt8] = []
            while at + 2 <= body.count {
                let length = Int(body[at]) << 8 | Int(body[at + 1])
                let filter = String(decoding: body[at + 2..<at + 2 + length], as: UTF8.self)
                let options = body[at + 2 + length]
                subscriptions.append((filter, options))
                granted.append(options & 3)
                at += 3 + length
            }
            write(fd, [0x90, UInt8(2 + granted.count)] + body[0..<2] + granted)
        case 12:  // PINGREQ
            write(fd, [0xD0, 0])
        default:  // DISCONNECT, or anything else: goodbye
            hangUp(fd)
        }
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }

    private func hangUp(_ fd: Int32) {
        guard buffers.removeValue(forKey: fd) != nil else { return }
        loop.unwatch(fd)
        shutdown(fd, Int32(SHUT_WR))
        close(fd)
    }
}
