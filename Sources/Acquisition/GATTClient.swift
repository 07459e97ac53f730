// The GATT client procedures (Core Spec Vol 3 Part G, section 4) over an ATT bearer: MTU
// exchange, primary service, characteristic and descriptor discovery, read (continued with read
// blob when the value fills the MTU), write request and write command; and the values the server
// notifies or indicates, handed by handle to whoever registered for them, with the time the
// kernel received them, each indication confirmed once they are done (as in BlueZ's
// src/shared/gatt-client.c). Discovery results are plain values so a session can cache them per
// tag and skip discovery on reconnect. A session sees its link only through its client.

import Profiles

/// A primary service and its handle range.
public struct GATTService: Sendable, Hashable {
    public var uuid: GATTUUID
    public var start: UInt16
    public var end: UInt16
    public var characteristics: [GATTCharacteristic]

    public init(uuid: GATTUUID, start: UInt16, end: UInt16, characteristics: [GATTCharacteristic] = []) {
        self.uuid = uuid
        self.start = start
        self.end = end
        self.characteristics = characteristics
    }
}

/// A characteristic: its declaration, value handle, properties and, when it has one, its CCCD.
public struct GATTCharacteristic: Sendable, Hashable {
    public var uuid: GATTUUID
    public var declaration: UInt16
    public var valueHandle: UInt16
    public var properties: CharacteristicProperties
    /// Last handle that belongs to this characteristic (its descriptors end there).
    public var end: UInt16
    public var cccd: UInt16?

    public init(uuid: GATTUUID, declaration: UInt16, valueHandle: UInt16, properties: CharacteristicProperties,
                end: UInt16, cccd: UInt16? = nil) {
        self.uuid = uuid
        self.declaration = declaration
        self.valueHandle = valueHandle
        self.properties = properties
        self.end = end
        self.cccd = cccd
    }
}

/// Everything discovery found on a device.
public struct GATTDatabase: Sendable, Hashable {
    public var services: [GATTService]
    public init(services: [GATTService]) { self.services = services }

    public func service(_ uuid: GATTUUID) -> GATTService? { services.first { $0.uuid == uuid } }

    public func characteristic(_ uuid: GATTUUID, in service: GATTUUID? = nil) -> GATTCharacteristic? {
        for s in services where service == nil || s.uuid == service {
            if let c = s.characteristics.first(where: { $0.uuid == uuid }) { return c }
        }
        return nil
    }
}

public enum GATTError: Error, Sendable, Equatable, CustomStringConvertible {
    case att(ATTRequestError)
    /// The peer answered with a PDU that makes no sense for the procedure.
    case protocolViolation(String)

    public var description: String {
        switch self {
        case .att(let e): return e.description
        case .protocolViolation(let why): return "protocol violation: \(why)"
        }
    }
}

public final class GATTClient {
    /// The link, for its owner (its counters and descriptor); the client's user goes through the
    /// client. The client takes the bearer's notification and indication handlers over.
    public let bearer: ATTBearer
    private var writer = ATTWriter()

    public static let primaryService = GATTUUID.sig(0x2800)
    public static let characteristicDeclaration = GATTUUID.sig(0x2803)

    public init(bearer: ATTBearer) {
        self.bearer = bearer
        // Unowned, not weak: the deinit below takes both handlers back, so they never run without
        // the client, and a weak capture would cost a checked access to its box, a side table for
        // the client and the slow path of every retain and release of it, at each value.
        bearer.onNotification = { [unowned self] handle, value in received(handle, value, indication: false) }
        bearer.onIndication = { [unowned self] handle, value in received(handle, value, indication: true) }
    }

    deinit {
        // The bearer confirms indications itself once nobody handles them.
        bearer.onNotification = nil
        bearer.onIndication = nil
    }

    // MARK: The link

    /// Called once, when the link closes for any reason.
    public var onClose: ((ATTBearerCloseReason) -> Void)? {
        get { bearer.onClose }
        set { bearer.onClose = newValue }
    }

    public var isOpen: Bool { bearer.isOpen }

    /// Closes the link; `onClose` hears `.local`.
    public func close() { bearer.close(.local) }

    /// Reads what the link's socket holds now, as the loop would once it finds it readable: a
    /// timer that judges the link by what arrived calls this first (`ATTBearer.readPending`).
    public func readPending() { bearer.readPending() }

    /// PDUs the kernel dropped on this link because its receive queue was full, as of the last
    /// one read.
    public var kernelDropped: UInt64 { bearer.counters.kernelDropped }

    // MARK: Notifications and indications

    /// A value the server notified or indicated: its handle, the value (a span over the bearer's
    /// receive buffer, valid only during the call) and when the kernel received it.
    public typealias ValueHandler = (_ handle: UInt16, _ value: borrowing RawSpan, _ arrival: Arrival) -> Void

    /// One registration, to end with `unregister`.
    public struct ValueRegistration: Sendable, Hashable {
        fileprivate let id: UInt64
    }

    private struct Registration {
        let id: UInt64
        let handle: UInt16
        let handler: ValueHandler
    }
    private var registrations: [Registration] = []
    private var lastRegistration: UInt64 = 0
    private static let confirmation: [UInt8] = [ATTOpcode.handleValueConfirmation.rawValue]

    /// Notified or indicated values on handles nobody registered for (counted, otherwise dropped).
    public private(set) var unclaimedValues: UInt64 = 0

    /// Calls `handler` with every value the server notifies or indicates on `handle`, until
    /// `unregister`. Several registrations of one handle each get its values, in the order made.
    /// Subscribing (the CCCD write) is the caller's.
    @discardableResult
    public func register(valuesOf handle: UInt16, _ handler: @escaping ValueHandler) -> ValueRegistration {
        lastRegistration &+= 1
        registrations.append(Registration(id: lastRegistration, handle: handle, handler: handler))
        return ValueRegistration(id: lastRegistration)
    }

    public func unregister(_ registration: ValueRegistration) {
        // A plain loop rather than `removeAll(where:)`: no closure runs inside an access to
        // `registrations`, so the optimizer can prove that none of its accesses overlap and drops
        // their runtime exclusivity checks, one of them at each value received.
        for i in registrations.indices where registrations[i].id == registration.id {
            registrations.remove(at: i)
            return
        }
    }

    public func unregisterAll() {
        registrations.removeAll()
    }

    /// The hot path: a scan over the registrations (a dozen at most), no allocation. An indication
    /// is confirmed once every handler has returned, whether anyone took it or not, so the
    /// server's next one may come.
    private func received(_ handle: UInt16, _ value: borrowing RawSpan, indication: Bool) {
        let arrival = bearer.arrival
        // A handler that unregisters (a session ending) changes `registrations`, not this copy.
        let list = registrations
        var claimed = false
        for r in list where r.handle == handle {
            claimed = true
            r.handler(handle, value, arrival)
        }
        if !claimed { unclaimedValues &+= 1 }
        if indication { bearer.send(GATTClient.confirmation) }
    }

    // MARK: MTU

    /// Offers `bearer.preferredMTU` and settles on the smaller of both sides' values.
    public func exchangeMTU(_ completion: @escaping (Result<Int, GATTError>) -> Void) {
        writer.exchangeMTU(bearer.preferredMTU)
        bearer.request(writer.bytes) { [bearer] result, _ in
            switch result {
            case .success(.exchangeMTUResponse(let serverMTU)):
                bearer.mtu = max(ATT.defaultMTU, min(Int(serverMTU), bearer.preferredMTU))
                completion(.success(bearer.mtu))
            case .success(let other):
                completion(.failure(.protocolViolation("unexpected \(other) to an MTU exchange")))
            case .failure(.error(.requestNotSupported, _)):
                completion(.success(bearer.mtu))  // the server keeps the default MTU
            case .failure(let e):
                completion(.failure(.att(e)))
            }
        }
    }

    // MARK: Discovery

    /// Discovers every primary service, then every characteristic and CCCD in each.
    public func discoverAll(_ completion: @escaping (Result<GATTDatabase, GATTError>) -> Void) {
        discoverPrimaryServices { [self] result in
            switch result {
            case .failure(let e): completion(.failure(e))
            case .success(let services): fillServices(services, index: 0, completion)
            }
        }
    }

    private func fillServices(_ services: [GATTService], index: Int, _ completion: @escaping (Result<GATTDatabase, GATTError>) -> Void) {
        guard index < services.count else { return completion(.success(GATTDatabase(services: services))) }
        discoverCharacteristics(of: services[index]) { [self] result in
            switch result {
            case .failure(let e): completion(.failure(e))
            case .success(let characteristics):
                var services = services
                services[index].characteristics = characteristics
                discoverCCCDs(characteristics, index: 0) { [self] result in
                    switch result {
                    case .failure(let e): completion(.failure(e))
                    case .success(let withCCCDs):
                        services[index].characteristics = withCCCDs
                        fillServices(services, index: index + 1, completion)
                    }
                }
            }
        }
    }

    /// Read By Group Type over the whole handle range.
    public func discoverPrimaryServices(_ completion: @escaping (Result<[GATTService], GATTError>) -> Void) {
        page(from: 1, to: 0xFFFF, found: [], completion, request: { writer, start, end in
            writer.readByGroupType(start: start, end: end, type: GATTClient.primaryService)
        }) { pdu, bytes, start, found throws(GATTError) in
            guard case .readByGroupTypeResponse(let length) = pdu, length == 6 || length == 20 else {
                throw .protocolViolation("bad primary service response \(pdu)")
            }
            let list = ATTList(pdu, in: bytes)
            var last = start
            for i in 0..<list.count {
                let at = list.start(i)
                let handle = UInt16.load(from: bytes, at: at), end = UInt16.load(from: bytes, at: at + 2)
                guard handle >= start, end >= handle, handle > (found.last?.end ?? 0),
                      let uuid = try? GATTUUID.load(from: bytes.extracting((at + 4)..<(at + length))) else {
                    throw .protocolViolation("bad or out-of-order service declaration")
                }
                found.append(GATTService(uuid: uuid, start: handle, end: end))
                last = end
            }
            return last
        }
    }

    /// Read By Type for characteristic declarations within the service's range.
    public func discoverCharacteristics(of service: GATTService, _ completion: @escaping (Result<[GATTCharacteristic], GATTError>) -> Void) {
        let done: (Result<[GATTCharacteristic], GATTError>) -> Void = { result in
            completion(result.map { list in
                // Each characteristic ends where the next declaration begins, or at the service end.
                var list = list
                for i in list.indices {
                    list[i].end = i + 1 < list.count ? list[i + 1].declaration - 1 : service.end
                }
                return list
            })
        }
        page(from: service.start, to: service.end, found: [], done, request: { writer, start, end in
            writer.readByType(start: start, end: end, type: GATTClient.characteristicDeclaration)
        }) { pdu, bytes, start, found throws(GATTError) in
            guard case .readByTypeResponse(let length) = pdu, length == 7 || length == 21 else {
                throw .protocolViolation("bad characteristic response \(pdu)")
            }
            let list = ATTList(pdu, in: bytes)
            var last = start
            for i in 0..<list.count {
                let at = list.start(i)
                let declaration = UInt16.load(from: bytes, at: at)
                let properties = CharacteristicProperties(rawValue: UInt8.load(from: bytes, at: at + 2))
                let value = UInt16.load(from: bytes, at: at + 3)
                guard declaration >= start, declaration <= service.end, value > declaration, value <= service.end,
                      declaration > (found.last?.declaration ?? 0),
                      let uuid = try? GATTUUID.load(from: bytes.extracting((at + 5)..<(at + length))) else {
                    throw .protocolViolation("bad characteristic declaration")
                }
                found.append(GATTCharacteristic(uuid: uuid, declaration: declaration, valueHandle: value,
                                                properties: properties, end: service.end))
                last = declaration
            }
            return last
        }
    }

    /// Finds the CCCD of every characteristic that can notify or indicate.
    private func discoverCCCDs(_ list: [GATTCharacteristic], index: Int,
                               _ completion: @escaping (Result<[GATTCharacteristic], GATTError>) -> Void) {
        var i = index
        while i < list.count && (!list[i].properties.contains(.notify) && !list[i].properties.contains(.indicate)
                                 || list[i].valueHandle >= list[i].end) {
            i += 1
        }
        guard i < list.count else { return completion(.success(list)) }
        discoverDescriptors(from: list[i].valueHandle + 1, to: list[i].end) { [self] result in
            switch result {
            case .failure(let e): completion(.failure(e))
            case .success(let descriptors):
                var list = list
                list[i].cccd = descriptors.first { $0.uuid == ClientConfiguration.uuid }?.handle
                discoverCCCDs(list, index: i + 1, completion)
            }
        }
    }

    /// Find Information over a handle range.
    public func discoverDescriptors(from start: UInt16, to end: UInt16,
                                    _ completion: @escaping (Result<[(handle: UInt16, uuid: GATTUUID)], GATTError>) -> Void) {
        page(from: start, to: end, found: [], completion, request: { writer, start, end in
            writer.findInformation(start: start, end: end)
        }) { pdu, bytes, start, found throws(GATTError) in
            guard case .findInformationResponse(let uuidLength) = pdu else {
                throw .protocolViolation("bad find information response \(pdu)")
            }
            let list = ATTList(pdu, in: bytes)
            var last = start
            for i in 0..<list.count {
                let at = list.start(i)
                let handle = UInt16.load(from: bytes, at: at)
                guard handle >= start, handle <= end, handle >= last,
                      let uuid = try? GATTUUID.load(from: bytes.extracting((at + 2)..<(at + 2 + uuidLength))) else {
                    throw .protocolViolation("descriptor handles out of range")
                }
                found.append((handle, uuid))
                last = handle
            }
            return last
        }
    }

    /// The discovery procedures' common shape: a list request over [start, end], continued after
    /// the last handle of each response until the range is exhausted or the server answers
    /// "attribute not found". `parse` appends what one response lists and returns its last handle.
    private func page<T>(from start: UInt16, to end: UInt16, found: [T],
                         _ completion: @escaping (Result<[T], GATTError>) -> Void,
                         request: @escaping (inout ATTWriter, UInt16, UInt16) -> Void,
                         parse: @escaping (ATTPDU, borrowing RawSpan, UInt16, inout [T]) throws(GATTError) -> UInt16) {
        guard start != 0, start <= end else { return completion(.success(found)) }
        request(&writer, start, end)
        bearer.request(writer.bytes) { [self] result, bytes in
            switch result {
            case .failure(.error(.attributeNotFound, _)):
                completion(.success(found))
            case .failure(let e):
                completion(.failure(.att(e)))
            case .success(let pdu):
                var found = found
                let last: UInt16
                do throws(GATTError) {
                    last = try parse(pdu, bytes, start, &found)
                } catch {
                    return completion(.failure(error))
                }
                if last >= end { return completion(.success(found)) }
                page(from: last + 1, to: end, found: found, completion, request: request, parse: parse)
            }
        }
    }

    // MARK: Values

    /// Reads a value; a value that fills the MTU is continued with Read Blob until it ends.
    public func read(_ handle: UInt16, _ completion: @escaping (Result<[UInt8], GATTError>) -> Void) {
        read(handle, withArrival: { result, _ in completion(result) })
    }

    /// `read`, with when the kernel received the (last) response: a value read is taken at that
    /// time, as a notified one is at its own arrival.
    public func read(_ handle: UInt16, withArrival completion: @escaping (Result<[UInt8], GATTError>, Arrival) -> Void) {
        writer.read(handle)
        bearer.request(writer.bytes) { [self] result, bytes in
            switch result {
            case .failure(let e): completion(.failure(.att(e)), bearer.arrival)
            case .success(.readResponse):
                var value: [UInt8] = []
                for i in 1..<bytes.byteCount { value.append(UInt8.load(from: bytes, at: i)) }
                if bytes.byteCount == bearer.mtu { readBlob(handle, value, completion) } else { completion(.success(value), bearer.arrival) }
            case .success(let other):
                completion(.failure(.protocolViolation("unexpected \(other) to a read")), bearer.arrival)
            }
        }
    }

    private func readBlob(_ handle: UInt16, _ value: [UInt8], _ completion: @escaping (Result<[UInt8], GATTError>, Arrival) -> Void) {
        guard value.count < 512 else { return completion(.success(value), bearer.arrival) }
        writer.readBlob(handle, offset: UInt16(value.count))
        bearer.request(writer.bytes) { [self] result, bytes in
            switch result {
            case .failure(.error(.attributeNotLong, _)), .failure(.error(.invalidOffset, _)):
                completion(.success(value), bearer.arrival)
            case .failure(let e): completion(.failure(.att(e)), bearer.arrival)
            case .success(.readBlobResponse):
                var value = value
                for i in 1..<bytes.byteCount { value.append(UInt8.load(from: bytes, at: i)) }
                if bytes.byteCount == bearer.mtu { readBlob(handle, value, completion) } else { completion(.success(value), bearer.arrival) }
            case .success(let other):
                completion(.failure(.protocolViolation("unexpected \(other) to a read blob")), bearer.arrival)
            }
        }
    }

    /// Write Request: completes when the server acknowledges (or refuses) the value.
    public func write(_ handle: UInt16, _ value: [UInt8], _ completion: @escaping (Result<Void, GATTError>) -> Void) {
        writer.write(handle, value)
        bearer.request(writer.bytes) { result, _ in
            switch result {
            case .success(.writeResponse): completion(.success(()))
            case .success(let other): completion(.failure(.protocolViolation("unexpected \(other) to a write")))
            case .failure(let e): completion(.failure(.att(e)))
            }
        }
    }
}
