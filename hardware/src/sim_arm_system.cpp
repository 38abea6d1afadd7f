// ne_dynamics_ros_hardware/SimArmSystem: a ros2_control hardware interface whose robot is
// sim_arm_node, reached over two Unix datagram sockets, as a real driver reaches its arm.
//
// A real driver's read() returns the robot's newest state once per cycle and the robot's
// own clock paces the loop (UR's RTDE, libfranka, KUKA's FRI). This plugin does the same
// with the simulated arm and keeps DDS (and rclcpp) off controller_manager's realtime
// thread:
//
//   write(): one datagram to the arm: the effort command of every joint, the instants of
//            this cycle's read() and of this write (system clock, ns), a sequence number.
//            The arm steps its dynamics over the time since the previous write under the
//            command in force then, takes the new command, carries the arm on to the
//            hardware's next read and sends that state back at once.
//   read():  takes every datagram waiting (non-blocking) and keeps the newest state:
//            never a queued one, and a cycle the arm did not answer reads the previous
//            state again (counted, and reported when the hardware deactivates). The
//            state is the arm's at its stamp (the read the arm expected); a read at
//            another instant (the loop woke late, or overran), or one the arm's answer
//            came too late for, carries it to its own instant under the commands this
//            plugin wrote since, as the physical arm has moved on meanwhile: over each
//            command's interval h, qdd = qdd0 + Minv (tau - tau0) (the arm sends qdd0
//            under its command tau0 and Minv = d qdd / d tau), q += qd h + qdd h^2 / 2,
//            qd += qdd h; at most 20 ms in all. Without it the node saw a state older
//            than its stamp (an error of qd dt on every joint: the worst sample of each
//            move on the UR5e), and states cycles old when the arm's process was late.
//
// Datagram layout (host byte order, both ways; ne_dynamics_ros/simulation/hardware_link.py
// is the arm's side and the reference for it):
//   command  "NECM" uint32 n, uint64 seq, int64 read_ns, int64 write_ns,
//            double effort[n], then the n joint names, each '\0'-terminated
//   state    "NEST" uint32 n, uint64 seq (of the command it follows), int64 stamp_ns,
//            double position[n], velocity[n], acceleration[n], effort[n],
//            inverse_inertia[n * n] (row-major; joints in the command's order; SI units)
//            A state of another size or magic, or with a value that is not finite, is
//            dropped (counted as malformed): read() keeps the previous one.
//
// <hardware> parameters: channel (the abstract socket names "@<channel>/arm" and
// "@<channel>/hardware"; required). An effort command interface that holds NaN (no
// controller has claimed it yet) is sent as 0: no command, no effort.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "hardware_interface/system_interface.hpp"
#include "hardware_interface/types/hardware_interface_return_values.hpp"
#include "pluginlib/class_list_macros.hpp"
#include "rclcpp/rclcpp.hpp"
#include "rclcpp_lifecycle/state.hpp"

namespace ne_dynamics_ros_hardware
{
using CallbackReturn = hardware_interface::CallbackReturn;
using hardware_interface::return_type;

namespace
{
constexpr char COMMAND_MAGIC[4] = {'N', 'E', 'C', 'M'};
constexpr char STATE_MAGIC[4] = {'N', 'E', 'S', 'T'};
constexpr size_t COMMAND_HEADER = 4 + 4 + 8 + 8 + 8;
constexpr size_t STATE_HEADER = 4 + 4 + 8 + 8;
// a read within this of the state's stamp takes the state as it is (the clocks' jitter)
constexpr int64_t CARRY_BELOW_NS = 50000;
// and never carries a state further than this: an arm silent longer (stopped, or starved
// of the CPU) is reported as carried this far, not extrapolated on
constexpr int64_t CARRY_AT_MOST_NS = 20000000;
// the writes remembered for the carry (0.13 s at 500 Hz)
constexpr size_t WRITES_KEPT = 64;

int64_t now_ns()
{
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

sockaddr_un abstract_address(const std::string & name, socklen_t & length)
{
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const size_t size = std::min(name.size(), sizeof(address.sun_path) - 1);
  std::memcpy(address.sun_path + 1, name.data(), size);   // sun_path[0] = '\0': abstract
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + size);
  return address;
}
}  // namespace

class SimArmSystem : public hardware_interface::SystemInterface
{
public:
  ~SimArmSystem() override {close_socket();}

  CallbackReturn on_init(const hardware_interface::HardwareComponentInterfaceParams & params)
  override
  {
    if (SystemInterface::on_init(params) != CallbackReturn::SUCCESS) {
      return CallbackReturn::ERROR;
    }
    const auto & parameters = info_.hardware_parameters;
    const auto channel = parameters.find("channel");
    if (channel == parameters.end() || channel->second.empty()) {
      RCLCPP_ERROR(get_logger(), "SimArmSystem needs the <param name=\"channel\"> of its arm");
      return CallbackReturn::ERROR;
    }
    channel_ = channel->second;
    n_ = info_.joints.size();
    for (const auto & joint : info_.joints) {
      for (const char * name : {"position", "velocity", "effort"}) {
        const bool has = std::any_of(
          joint.state_interfaces.begin(), joint.state_interfaces.end(),
          [name](const auto & i) {return i.name == name;});
        if (!has) {
          RCLCPP_ERROR(get_logger(), "joint %s has no '%s' state interface", joint.name.c_str(),
            name);
          return CallbackReturn::ERROR;
        }
      }
      if (joint.command_interfaces.size() != 1 || joint.command_interfaces[0].name != "effort") {
        RCLCPP_ERROR(get_logger(), "joint %s: SimArmSystem takes exactly one 'effort' command "
          "interface", joint.name.c_str());
        return CallbackReturn::ERROR;
      }
    }
    command_.assign(COMMAND_HEADER + 8 * n_, 0);
    for (const auto & joint : info_.joints) {
      position_names_.push_back(joint.name + "/position");
      velocity_names_.push_back(joint.name + "/velocity");
      effort_names_.push_back(joint.name + "/effort");
      command_.insert(command_.end(), joint.name.begin(), joint.name.end());
      command_.push_back(0);
    }
    std::memcpy(command_.data(), COMMAND_MAGIC, 4);
    const uint32_t n = static_cast<uint32_t>(n_);
    std::memcpy(command_.data() + 4, &n, 4);
    state_.assign(STATE_HEADER + 8 * n_ * (4 + n_) + 64, 0);
    position_.assign(n_, 0.0);
    velocity_.assign(n_, 0.0);
    acceleration_.assign(n_, 0.0);
    inverse_inertia_.assign(n_ * n_, 0.0);
    written_.assign(WRITES_KEPT, Written{0, 0, std::vector<double>(n_, 0.0)});
    carried_position_.assign(n_, 0.0);
    carried_velocity_.assign(n_, 0.0);
    effort_.assign(n_, 0.0);
    return CallbackReturn::SUCCESS;
  }

  CallbackReturn on_configure(const rclcpp_lifecycle::State &) override
  {
    close_socket();
    socket_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (socket_ < 0) {
      RCLCPP_ERROR(get_logger(), "socket(): %s", std::strerror(errno));
      return CallbackReturn::ERROR;
    }
    socklen_t length = 0;
    const sockaddr_un own = abstract_address(channel_ + "/hardware", length);
    if (::bind(socket_, reinterpret_cast<const sockaddr *>(&own), length) != 0) {
      RCLCPP_ERROR(get_logger(), "bind(@%s/hardware): %s (another hardware on this channel?)",
        channel_.c_str(), std::strerror(errno));
      close_socket();
      return CallbackReturn::ERROR;
    }
    arm_ = abstract_address(channel_ + "/arm", arm_length_);
    for (size_t j = 0; j < n_; ++j) {
      const auto & joint = info_.joints[j];
      const auto & position = joint.state_interfaces[index_of(joint.state_interfaces,
          "position")];
      position_[j] = position.initial_value.empty() ? 0.0 : std::stod(position.initial_value);
      set_state(joint.name + "/position", position_[j]);
      set_state(joint.name + "/velocity", 0.0);
      set_state(joint.name + "/effort", 0.0);
    }
    RCLCPP_INFO(get_logger(), "SimArmSystem: %zu joints, the arm at @%s/arm", n_,
      channel_.c_str());
    return CallbackReturn::SUCCESS;
  }

  CallbackReturn on_deactivate(const rclcpp_lifecycle::State &) override
  {
    RCLCPP_INFO(get_logger(), "SimArmSystem: %lu reads, %lu found no new state, %lu states "
      "taken behind a newer one, %lu writes not delivered, %lu states carried to their read "
      "(at most %.3f ms), %lu malformed or non-finite states dropped",
      static_cast<unsigned long>(reads_),
      static_cast<unsigned long>(repeated_), static_cast<unsigned long>(skipped_),
      static_cast<unsigned long>(undelivered_), static_cast<unsigned long>(carried_),
      carried_max_ns_ * 1e-6, static_cast<unsigned long>(malformed_));
    return CallbackReturn::SUCCESS;
  }

  CallbackReturn on_cleanup(const rclcpp_lifecycle::State &) override
  {
    close_socket();
    return CallbackReturn::SUCCESS;
  }

  return_type read(const rclcpp::Time &, const rclcpp::Duration &) override
  {
    read_ns_ = now_ns();
    ++reads_;
    size_t fresh = 0;
    for (;;) {
      const ssize_t size = ::recv(socket_, state_.data(), state_.size(), MSG_DONTWAIT);
      if (size < 0) {
        break;             // EAGAIN: nothing more waiting
      }
      if (static_cast<size_t>(size) != STATE_HEADER + 8 * n_ * (4 + n_) ||
        std::memcmp(state_.data(), STATE_MAGIC, 4) != 0)
      {
        ++malformed_;
        continue;
      }
      const double * values = reinterpret_cast<const double *>(state_.data() + STATE_HEADER);
      // a state with a NaN or inf anywhere (also in its acceleration or its inverse
      // inertia, which the carry multiplies in) is dropped as malformed: the previous
      // state stays, and nothing non-finite reaches the state interfaces
      if (!std::all_of(values, values + n_ * (4 + n_), [](double v) {return std::isfinite(v);})) {
        ++malformed_;
        continue;
      }
      ++fresh;
      std::copy(values, values + n_, position_.begin());
      std::copy(values + n_, values + 2 * n_, velocity_.begin());
      std::copy(values + 2 * n_, values + 3 * n_, acceleration_.begin());
      std::copy(values + 3 * n_, values + 4 * n_, effort_.begin());
      std::copy(values + 4 * n_, values + 4 * n_ + n_ * n_, inverse_inertia_.begin());
      std::memcpy(&state_seq_, state_.data() + 8, 8);
      std::memcpy(&stamp_ns_, state_.data() + 16, 8);
    }
    if (fresh == 0) {
      ++repeated_;
    } else {
      skipped_ += fresh - 1;
    }
    carry_to_read();
    for (size_t j = 0; j < n_; ++j) {
      set_state(position_names_[j], carried_position_[j]);
      set_state(velocity_names_[j], carried_velocity_[j]);
      set_state(effort_names_[j], effort_[j]);
    }
    return return_type::OK;
  }

  return_type write(const rclcpp::Time &, const rclcpp::Duration &) override
  {
    const uint64_t seq = ++sequence_;
    const int64_t write_ns = now_ns();
    std::memcpy(command_.data() + 8, &seq, 8);
    std::memcpy(command_.data() + 16, &read_ns_, 8);
    std::memcpy(command_.data() + 24, &write_ns, 8);
    for (size_t j = 0; j < n_; ++j) {
      double effort = get_command<double>(effort_names_[j]);   // the command interface's name
      if (!std::isfinite(effort)) {
        effort = 0.0;
      }
      std::memcpy(command_.data() + COMMAND_HEADER + 8 * j, &effort, 8);
      written_[seq % WRITES_KEPT].effort[j] = effort;
    }
    written_[seq % WRITES_KEPT].seq = seq;
    written_[seq % WRITES_KEPT].write_ns = write_ns;
    const ssize_t sent = ::sendto(socket_, command_.data(), command_.size(), MSG_DONTWAIT,
        reinterpret_cast<const sockaddr *>(&arm_), arm_length_);
    if (sent < 0) {
      ++undelivered_;      // no arm (yet) on the channel, or its queue full: as a lost packet
    }
    return return_type::OK;
  }

private:
  struct Written
  {
    uint64_t seq;
    int64_t write_ns;
    std::vector<double> effort;
  };

  // The newest state carried from its stamp to this read (see the header comment).
  void carry_to_read()
  {
    carried_position_ = position_;
    carried_velocity_ = velocity_;
    if (stamp_ns_ == 0) {
      return;
    }
    const int64_t late_ns = read_ns_ - stamp_ns_;
    const int64_t off_ns = late_ns < 0 ? -late_ns : late_ns;
    if (off_ns <= CARRY_BELOW_NS) {
      return;
    }
    ++carried_;
    carried_max_ns_ = std::max(carried_max_ns_, off_ns);
    const int64_t end_ns = stamp_ns_ + std::clamp(late_ns, -CARRY_AT_MOST_NS,
        CARRY_AT_MOST_NS);
    const Written & answered = written_[state_seq_ % WRITES_KEPT];
    const bool known = answered.seq == state_seq_;
    if (end_ns < stamp_ns_ || !known) {     // early: the command the state came with
      advance((end_ns - stamp_ns_) * 1e-9, nullptr, nullptr);
      return;
    }
    // the command of each write after the answered one acts from its write on
    int64_t from_ns = stamp_ns_;
    const std::vector<double> * effort = &answered.effort;
    for (uint64_t seq = state_seq_ + 1; seq <= sequence_ && seq < state_seq_ + WRITES_KEPT;
      ++seq)
    {
      const Written & next = written_[seq % WRITES_KEPT];
      if (next.seq != seq || next.write_ns >= end_ns) {
        break;
      }
      if (next.write_ns > from_ns) {
        advance((next.write_ns - from_ns) * 1e-9, effort, &answered.effort);
        from_ns = next.write_ns;
      }
      effort = &next.effort;
    }
    advance((end_ns - from_ns) * 1e-9, effort, &answered.effort);
  }

  // Carry the state h s on under effort (qdd = qdd0 + Minv (effort - effort0)).
  void advance(
    double h, const std::vector<double> * effort,
    const std::vector<double> * effort0)
  {
    for (size_t j = 0; j < n_; ++j) {
      double qdd = acceleration_[j];
      if (effort != nullptr && effort != effort0) {
        for (size_t k = 0; k < n_; ++k) {
          qdd += inverse_inertia_[j * n_ + k] * ((*effort)[k] - (*effort0)[k]);
        }
      }
      carried_position_[j] += h * (carried_velocity_[j] + 0.5 * h * qdd);
      carried_velocity_[j] += h * qdd;
    }
  }

  static size_t index_of(
    const std::vector<hardware_interface::InterfaceInfo> & interfaces, const char * name)
  {
    for (size_t k = 0; k < interfaces.size(); ++k) {
      if (interfaces[k].name == name) {
        return k;
      }
    }
    return 0;
  }

  void close_socket()
  {
    if (socket_ >= 0) {
      ::close(socket_);
      socket_ = -1;
    }
  }

  std::string channel_;
  size_t n_ = 0;
  int socket_ = -1;
  sockaddr_un arm_{};
  socklen_t arm_length_ = 0;
  std::vector<uint8_t> command_;
  std::vector<uint8_t> state_;
  std::vector<double> position_, velocity_, acceleration_, effort_, inverse_inertia_;
  std::vector<double> carried_position_, carried_velocity_;
  std::vector<Written> written_;
  uint64_t state_seq_ = 0;
  std::vector<std::string> position_names_, velocity_names_, effort_names_;
  int64_t read_ns_ = 0;
  int64_t stamp_ns_ = 0;             // the arm's instant of the newest state (system clock)
  int64_t carried_max_ns_ = 0;
  uint64_t sequence_ = 0;
  uint64_t reads_ = 0, repeated_ = 0, skipped_ = 0, undelivered_ = 0, malformed_ = 0;
  uint64_t carried_ = 0;
};
}  // namespace ne_dynamics_ros_hardware

PLUGINLIB_EXPORT_CLASS(ne_dynamics_ros_hardware::SimArmSystem, hardware_interface::SystemInterface)
